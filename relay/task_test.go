package relay_test

import (
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/relay"
)

func TestOfflineTaskRunsAndKeepsItsResult(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		c := newClient(t, env, relay.Config{})
		tg := newTarget(t, func(w http.ResponseWriter, r *http.Request, n int64) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Secret", "not kept")
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"echo":"` + r.Method + " " + r.URL.RequestURI() + " " + r.Header.Get("X-Test") + `"}`))
		})
		setEndpoint(t, c, relay.Endpoint{Name: "gen", TargetURL: tg.URL + "/api", Concurrency: 2})
		startDispatcher(t, c, relay.DispatcherConfig{})

		res := submit(t, c, relay.SubmitParams{
			Endpoint: "gen", TargetURL: tg.URL + "/api/images", Method: http.MethodPut,
			Header: http.Header{"X-Test": {"yes"}}, Query: url.Values{"size": {"big"}}, Body: []byte("payload"),
		})
		if res.Status != relay.StatusPending || res.WaitNum < 0 || res.CreatedAt.IsZero() {
			t.Fatalf("Submit = %+v", res)
		}
		task := waitFinal(t, c, res.ID)
		if task.Status != relay.StatusCompleted || task.HTTPStatus != http.StatusCreated {
			t.Fatalf("task = %s %d (%s), want completed 201", task.Status, task.HTTPStatus, task.Error)
		}
		if got, want := string(task.Result), `{"echo":"PUT /api/images?size=big yes"}`; got != want {
			t.Fatalf("result = %s, want %s", got, want)
		}
		if task.ResultHeader.Get("Content-Type") != "application/json" || task.ResultHeader.Get("X-Secret") != "" {
			t.Fatalf("result headers = %v, want Content-Type only", task.ResultHeader)
		}
		if task.Tries != 1 || task.StartedAt.IsZero() || task.EndedAt.Before(task.StartedAt) || task.WaitNum != -1 {
			t.Fatalf("task = %+v", task)
		}
		if _, bodies := tg.snapshot(); len(bodies) != 1 || bodies[0] != "payload" {
			t.Fatalf("target got bodies %q", bodies)
		}
	})
}

func TestSubmitResolvesTargetURLAndRefusesOthers(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, relay.Config{})
	setEndpoint(t, c, relay.Endpoint{Name: "short", TargetURL: "https://api.example.com/v1"})
	setEndpoint(t, c, relay.Endpoint{Name: "long", TargetURL: "https://api.example.com/v1/slow"})

	r := submit(t, c, relay.SubmitParams{TargetURL: "https://api.example.com/v1/slow/x"})
	if r.Endpoint != "long" {
		t.Fatalf("endpoint = %s, want long (longest prefix)", r.Endpoint)
	}
	r = submit(t, c, relay.SubmitParams{TargetURL: "https://api.example.com/v1/other"})
	if r.Endpoint != "short" {
		t.Fatalf("endpoint = %s, want short", r.Endpoint)
	}
	for _, u := range []string{"https://api.example.com/v10", "https://api.example.com.evil/v1", "http://api.example.com/v1", "https://evil.com/"} {
		if _, err := c.Submit(ctxT(t), relay.SubmitParams{TargetURL: u}); !errors.Is(err, relay.ErrNotFound) {
			t.Errorf("Submit(%s) err = %v, want ErrNotFound", u, err)
		}
	}
	_, err := c.Submit(ctxT(t), relay.SubmitParams{Endpoint: "short", TargetURL: "https://evil.com/v1"})
	var fe *sluice.FieldError
	if !errors.As(err, &fe) || fe.Field != "target_url" {
		t.Fatalf("Submit(endpoint short, foreign URL) err = %v, want a target_url FieldError", err)
	}
	if _, err := c.Submit(ctxT(t), relay.SubmitParams{Endpoint: "nope"}); !errors.Is(err, relay.ErrNotFound) {
		t.Fatalf("Submit(unknown endpoint) err = %v, want ErrNotFound", err)
	}
}
