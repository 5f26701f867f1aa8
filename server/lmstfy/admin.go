package lmstfy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"runtime/debug"
	"strings"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/version"
	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/tenant"
)

// lmstfy's admin routes. Tokens are Sluice's namespace tokens (stored hashed, with every
// permission when made here); a token is named in paths by its secret or its id.

// writeIndented answers as lmstfy's admin routes do (gin's IndentedJSON).
func writeIndented(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		b = []byte(`{"error":"internal error"}`)
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// checkPool accepts no pool or lmstfy's default one, which is the only pool Sluice has;
// any other is 400 with lmstfy's message.
func checkPool(pool string) error {
	if pool == "" || pool == defaultPool {
		return nil
	}
	return errorf(http.StatusBadRequest, "the pool was not exists")
}

// listTokens is GET /token/{ns}: {"tokens": {id: description}}. lmstfy keys the map by the
// token secrets; Sluice stores only their hashes, so it lists the token ids.
func (a *API) listTokens(w http.ResponseWriter, r *http.Request) error {
	if err := checkPool(r.URL.Query().Get("pool")); err != nil {
		return err
	}
	ns := r.PathValue("ns")
	tokens := map[string]string{}
	if tenant.ValidName(ns) {
		list, err := a.tokens.List(r.Context(), ns)
		if err != nil {
			return err
		}
		for _, t := range list {
			tokens[t.ID] = t.Description
		}
	}
	writeIndented(w, http.StatusOK, map[string]any{"tokens": tokens})
	return nil
}

// newToken is POST /token/{ns}?description=[&token=]: a new token with every permission of the
// namespace, 201 {"token": secret}. description and token may also be form fields. token chooses
// the secret, as lmstfy's admin API allows (deployments bake tokens into their clients' configs);
// it is checked, then stored hashed like any other, and one that exists already answers lmstfy's
// 400 "the token has already existed".
func (a *API) newToken(w http.ResponseWriter, r *http.Request) error {
	if err := r.ParseForm(); err != nil {
		return errorf(http.StatusBadRequest, "invalid form")
	}
	ns := r.PathValue("ns")
	desc := r.Form.Get("description")
	userToken := r.Form.Get("token")
	if desc == "" {
		return errorf(http.StatusBadRequest, "invalid description")
	}
	if userToken != "" && len(userToken) < tenant.MinSecretLen {
		return errorf(http.StatusBadRequest, "the user token was too short")
	}
	if len(ns) > 255 {
		return errorf(http.StatusBadRequest, "the namespace name was too long")
	}
	if !tenant.ValidName(ns) {
		return errorf(http.StatusBadRequest, "namespace name contains forbidden characters")
	}
	pool, secret := r.URL.Query().Get("pool"), userToken
	if fields := strings.Split(userToken, ":"); len(fields) == 2 { // lmstfy's "pool:token"
		pool, secret = fields[0], fields[1]
	}
	if err := checkPool(pool); err != nil {
		return err
	}
	if secret != "" {
		var v *sluice.FieldError
		if err := tenant.CheckSecret(secret); errors.As(err, &v) {
			return errorf(http.StatusBadRequest, "invalid token: "+v.Reason)
		}
	}
	secret, _, err := a.tokens.Create(r.Context(), tenant.CreateTokenParams{Namespace: ns, Description: desc, Secret: secret})
	if errors.Is(err, tenant.ErrTokenExists) {
		return errorf(http.StatusBadRequest, errTokenExisted)
	}
	if err != nil {
		return err
	}
	if pool != "" { // lmstfy names the pool in the token when the request named one
		secret = pool + ":" + secret
	}
	writeIndented(w, http.StatusCreated, map[string]string{"token": secret})
	return nil
}

// errTokenExisted is lmstfy's answer to creating a token that exists (auth.ErrTokenExist).
const errTokenExisted = "the token has already existed"

// deleteToken is DELETE /token/{ns}/{token}: revoke the token (named by its secret or id)
// and drop its limit. 204 also when there was no such token, as lmstfy answers.
func (a *API) deleteToken(w http.ResponseWriter, r *http.Request) error {
	ns := r.PathValue("ns")
	pool, name := splitToken(r.PathValue("token"))
	if err := checkPool(pool); err != nil {
		return err
	}
	id, found, err := a.tokenID(r.Context(), ns, name)
	if err != nil {
		return err
	}
	if found {
		if err := a.tokens.Revoke(r.Context(), ns, id); err != nil && !errors.Is(err, tenant.ErrNotFound) {
			return err
		}
		if err := a.limits.Remove(r.Context(), ns, id); err != nil {
			return err
		}
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// tokenID finds a token of ns by its secret or its id; found is false when ns has none such.
func (a *API) tokenID(ctx context.Context, ns, secretOrID string) (id string, found bool, err error) {
	if !tenant.ValidName(ns) || secretOrID == "" {
		return "", false, nil
	}
	tok, err := a.tokens.Authenticate(ctx, secretOrID)
	switch {
	case err == nil:
		return tok.ID, tok.Namespace == ns, nil
	case !errors.Is(err, tenant.ErrUnauthenticated):
		return "", false, err
	}
	list, err := a.tokens.List(ctx, ns)
	if err != nil {
		return "", false, err
	}
	for _, t := range list {
		if t.ID == secretOrID {
			return t.ID, true, nil
		}
	}
	return "", false, nil
}

// limitToken resolves the {ns}/{token} of a limit route: an error for a pool other than
// lmstfy's, found false when the namespace has no such token.
func (a *API) limitToken(r *http.Request) (tok tenant.Token, found bool, err error) {
	ns := r.PathValue("ns")
	pool, name := splitToken(r.PathValue("token"))
	if err := checkPool(pool); err != nil {
		return tenant.Token{}, false, err
	}
	id, found, err := a.tokenID(r.Context(), ns, name)
	if err != nil || !found {
		return tenant.Token{}, false, err
	}
	return tenant.Token{ID: id, Namespace: ns}, true, nil
}

// errNoLimit is lmstfy's answer to reading a limit that is not there: 404 with a null body.
var errNoLimit = &Error{Status: http.StatusNotFound, Message: "no such token or limit", null: true}

// getLimit is GET /token/{ns}/{token}/limit: the limit, or 404 with a null body.
func (a *API) getLimit(w http.ResponseWriter, r *http.Request) error {
	tok, found, err := a.limitToken(r)
	if err != nil {
		return err
	}
	if !found {
		return errNoLimit
	}
	l, found, err := a.limits.Get(r.Context(), tok.Namespace, tok.ID)
	if err != nil {
		return err
	}
	if !found {
		return errNoLimit
	}
	httpapi.WriteJSON(w, http.StatusOK, l)
	return nil
}

// readLimit decodes and checks the JSON body of the POST and PUT limit routes.
func readLimit(r *http.Request) (tenant.Limit, error) {
	var l tenant.Limit
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(&l); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return l, errorf(http.StatusRequestEntityTooLarge, "body too large")
		}
		return l, errorf(http.StatusBadRequest, "invalid limiter: "+err.Error())
	}
	if _, msg := l.Problem(); msg != "" {
		return l, errorf(http.StatusBadRequest, msg)
	}
	return l, nil
}

// addLimit is POST /token/{ns}/{token}/limit: set a limit the token does not have yet.
func (a *API) addLimit(w http.ResponseWriter, r *http.Request) error {
	return a.storeLimit(w, r, false)
}

// setLimit is PUT /token/{ns}/{token}/limit: set or replace the token's limit.
func (a *API) setLimit(w http.ResponseWriter, r *http.Request) error {
	return a.storeLimit(w, r, true)
}

func (a *API) storeLimit(w http.ResponseWriter, r *http.Request, replace bool) error {
	l, err := readLimit(r)
	if err != nil {
		return err
	}
	tok, found, err := a.limitToken(r)
	if err != nil {
		return err
	}
	if !found {
		return errorf(http.StatusNotFound, "token not found")
	}
	added, err := a.limits.Set(r.Context(), tok.Namespace, tok.ID, l, replace)
	switch {
	case err != nil:
		return err
	case replace:
		httpapi.WriteJSON(w, http.StatusOK, map[string]tenant.Limit{"limiter": l})
	case !added:
		return errorf(http.StatusBadRequest, "the token already has a limit (PUT replaces it)")
	default:
		httpapi.WriteJSON(w, http.StatusCreated, map[string]tenant.Limit{"limiter": l})
	}
	return nil
}

// deleteLimit is DELETE /token/{ns}/{token}/limit: 200 {"msg": "success"}, also when the
// token (or its limit) is not there.
func (a *API) deleteLimit(w http.ResponseWriter, r *http.Request) error {
	tok, found, err := a.limitToken(r)
	if err != nil {
		return err
	}
	if found {
		if err := a.limits.Remove(r.Context(), tok.Namespace, tok.ID); err != nil {
			return err
		}
	}
	httpapi.WriteJSON(w, http.StatusOK, map[string]string{"msg": "success"})
	return nil
}

// limitEntry is one entry of GET /limits.
type limitEntry struct {
	Namespace string       `json:"namespace"`
	Token     string       `json:"token"` // the token id (lmstfy shows the secret)
	Limiter   tenant.Limit `json:"limiter"`
}

// listLimits is GET /limits: every token's limit. force_update is accepted and has nothing
// to do: this route reads Redis, and the servers' caches of limits last under a second.
func (a *API) listLimits(w http.ResponseWriter, r *http.Request) error {
	all, err := a.limits.List(r.Context())
	if err != nil {
		return err
	}
	out := make([]limitEntry, len(all))
	for i, e := range all {
		out[i] = limitEntry{Namespace: e.Namespace, Token: e.ID, Limiter: e.Limit}
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

// checkKind checks lmstfy's ?kind= (engine kind; default redis). Sluice's one pool counts as
// lmstfy's redis engine.
func checkKind(r *http.Request) (redisKind bool, err error) {
	switch r.URL.Query().Get("kind") {
	case "", "redis":
		return true, nil
	case "redis_v2", "migration":
		return false, nil
	}
	return false, errorf(http.StatusBadRequest, "invalid kind")
}

// listPools is GET /pools?kind=: the pool names, ["default"].
func (a *API) listPools(w http.ResponseWriter, r *http.Request) error {
	redisKind, err := checkKind(r)
	if err != nil {
		return err
	}
	pools := []string{}
	if redisKind {
		pools = append(pools, defaultPool)
	}
	writeIndented(w, http.StatusOK, pools)
	return nil
}

// getInfo is GET /info?pool=&kind=: every namespace with its queues.
func (a *API) getInfo(w http.ResponseWriter, r *http.Request) error {
	redisKind, err := checkKind(r)
	if err != nil {
		return err
	}
	if err := checkPool(r.URL.Query().Get("pool")); err != nil {
		return err
	}
	info := map[string][]string{}
	if redisKind {
		nss, err := a.queue.Namespaces(r.Context())
		if err != nil {
			return err
		}
		for _, ns := range nss {
			qs, err := a.queue.Queues(r.Context(), ns)
			if err != nil {
				return err
			}
			info[ns] = qs
		}
	}
	writeIndented(w, http.StatusOK, info)
	return nil
}

// getVersion is GET /version: {"version", "build_commit", "build_date"}.
func (a *API) getVersion(w http.ResponseWriter, _ *http.Request) error {
	v := version.Get()
	date := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, st := range bi.Settings {
			if st.Key == "vcs.time" {
				date = st.Value
			}
		}
	}
	writeIndented(w, http.StatusOK, map[string]string{
		"version": v.Version, "build_commit": v.Commit, "build_date": date,
	})
	return nil
}
