package ui

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/relay"
	"github.com/sluicehq/sluice/server/internal/httpapi"
)

// errNoRelay answers the request-queue pages of a server without a request queue.
var errNoRelay = &httpapi.Error{Code: httpapi.CodeNotFound, Message: "this server has no request queue"}

func (u *UI) endpointsLive(ctx context.Context) ([]relay.Endpoint, live, error) {
	eps, err := u.cfg.Relay.Endpoints(ctx)
	if err != nil {
		return nil, nil, err
	}
	l := live{}
	for _, ep := range eps {
		if err := u.endpointLive(ctx, l, ep.Name); err != nil {
			return nil, nil, err
		}
	}
	return eps, l, nil
}

// endpointLive adds an endpoint's live numbers to l, under "ep/<name>:".
func (u *UI) endpointLive(ctx context.Context, l live, name string) error {
	st, err := u.cfg.Relay.Stats(ctx, name)
	if err != nil {
		return relayErr(err)
	}
	k := "ep/" + name
	l[k+":queued"] = strconv.FormatInt(st.Queued, 10)
	l[k+":retrying"] = strconv.FormatInt(st.Retrying, 10)
	l[k+":running"] = strconv.FormatInt(st.Running, 10)
	l[k+":rate"] = strconv.FormatFloat(st.CompletedPerSec, 'f', 2, 64) + "/s"
	l[k+":eta"] = "–"
	if eta, ok := st.ETA(st.Queued); ok {
		l[k+":eta"] = roundDur(eta)
	} else if st.Queued == 0 {
		l[k+":eta"] = "0s"
	}
	return nil
}

// setEndpoint changes an endpoint's limits (qps, concurrency, max queued, timeout); the other
// settings stay.
func (u *UI) setEndpoint(w http.ResponseWriter, r *http.Request) error {
	ep, err := u.cfg.Relay.Endpoint(r.Context(), r.PathValue("name"))
	if err != nil {
		return relayErr(err)
	}
	qps, err := strconv.ParseFloat(strings.TrimSpace(r.PostFormValue("qps")), 64)
	if err != nil || qps < 0 {
		return httpapi.InvalidArg("qps", "a number of calls per second, 0 for no rate limit")
	}
	conc, err := strconv.Atoi(strings.TrimSpace(r.PostFormValue("concurrency")))
	if err != nil || conc < 1 {
		return httpapi.InvalidArg("concurrency", "a whole number of calls in flight, at least 1")
	}
	maxq, err := strconv.Atoi(strings.TrimSpace(r.PostFormValue("max_queued")))
	if err != nil || maxq < 1 {
		return httpapi.InvalidArg("max_queued", "a whole number of waiting tasks, at least 1")
	}
	secs, err := strconv.ParseFloat(strings.TrimSpace(r.PostFormValue("timeout")), 64)
	if err != nil || secs <= 0 {
		return httpapi.InvalidArg("timeout", "seconds a call may take, above 0")
	}
	ep.QPS, ep.Concurrency, ep.MaxQueued, ep.Timeout = qps, conc, maxq, time.Duration(secs*float64(time.Second))
	if _, err := u.cfg.Relay.SetEndpoint(r.Context(), ep); err != nil {
		return relayErr(err)
	}
	return done(w, r, "/ui/endpoints", noteEndpointSaved, 0)
}

func (u *UI) taskPage(w http.ResponseWriter, r *http.Request) error {
	data := map[string]any{"Enabled": u.cfg.Relay != nil}
	id := strings.TrimSpace(r.URL.Query().Get("id"))
	if u.cfg.Relay != nil && id != "" {
		t, err := u.cfg.Relay.Get(r.Context(), id)
		if err != nil {
			return relayErr(err)
		}
		data["Task"], data["Result"] = t, preview(t.Result)
	}
	u.render(w, r, http.StatusOK, "task", "Task", data)
	return nil
}

// relayErr gives the request queue's "not found" the dashboard's words; the rest (bad fields,
// Redis) go to the server's mapping.
func relayErr(err error) error {
	switch {
	case errors.Is(err, relay.ErrNotFound):
		return &httpapi.Error{Code: httpapi.CodeNotFound, Message: "no such endpoint or task", Cause: err}
	}
	return err
}
