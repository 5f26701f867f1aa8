package server

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// A hostile client that puts a 900 KB name or field into any route family (the native job and
// schedule API, the lmstfy-compatible routes, tasks and permits, rooms, the admin API, lmstfy's
// admin routes, the dashboard) gets its refusal in a small body: no answer echoes more than
// about 200 bytes of an input, and none is a 5xx.
func TestErrorBodiesEchoLittleOfHugeInputs(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.token(t, "shop")
	d := newDashboard(t, ts)
	d.login(t)
	huge := strings.Repeat("q", 900<<10)
	pathHuge, queryHuge := url.PathEscape(huge), url.QueryEscape(huge)
	public := func(method, path string, body any) func() response {
		return func() response { return ts.public(t, method, path, tok, body) }
	}
	admin := func(method, path string, body any) func() response {
		return func() response { return ts.adminDo(t, method, path, body) }
	}
	lmstfy := func(method, path string) func() response {
		return func() response {
			return sendWith(t, noRedirects, method, ts.PublicURL+path, map[string]string{"X-Token": tok}, url.Values{"x": {"1"}})
		}
	}
	page := func(path string) func() response { return func() response { return d.get(t, path) } }
	// header sends a request whose header name carries half the huge input (the headers of a
	// request are bounded at 1 MB in all).
	header := func(method, target, name string, body string) func() response {
		return func() response {
			req, err := http.NewRequestWithContext(ctxT(t), method, target, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set(name, huge[:450<<10])
			return exchange(t, noRedirects, req)
		}
	}
	job := func(field string, value any) map[string]any { return map[string]any{"payload": 1, field: value} }
	schedule := func(field string, value any) map[string]any {
		s := map[string]any{"every": 60, "job": map[string]any{"queue": "q", "payload": 1}}
		s[field] = value
		return s
	}
	for name, send := range map[string]func() response{
		"consume of a queue":         public(http.MethodPost, "/v1/ns/shop/consume", map[string]any{"queues": []string{huge}}),
		"consume ttr":                public(http.MethodPost, "/v1/ns/shop/consume", map[string]any{"queues": []string{"q"}, "ttr": huge}),
		"publish to a queue":         public(http.MethodPost, "/v1/ns/shop/queues/"+strings.Repeat("a%20", 200<<10)+"/jobs", `{"payload":1}`),
		"publish unique key":         public(http.MethodPost, "/v1/ns/shop/queues/q/jobs", job("unique_key", huge)),
		"publish attribute name":     public(http.MethodPost, "/v1/ns/shop/queues/q/jobs", job("attributes", map[string]string{huge: "x"})),
		"publish unknown field":      public(http.MethodPost, "/v1/ns/shop/queues/q/jobs", job(huge, 1)),
		"publish delay":              public(http.MethodPost, "/v1/ns/shop/queues/q/jobs", job("delay", huge)),
		"publish callback":           public(http.MethodPost, "/v1/ns/shop/queues/q/jobs", job("callback", map[string]any{"url": "https://" + huge})),
		"job":                        public(http.MethodGet, "/v1/ns/shop/queues/q/jobs/"+pathHuge, nil),
		"ack":                        public(http.MethodPost, "/v1/ns/shop/queues/q/jobs/"+pathHuge+"/ack", `{"delivery":1}`),
		"namespace of a token":       public(http.MethodGet, "/v1/ns/"+pathHuge+"/queues", nil),
		"jobs of a state":            public(http.MethodGet, "/v1/ns/shop/queues/q/jobs?state="+queryHuge, nil),
		"dead letter cursor":         public(http.MethodGet, "/v1/ns/shop/queues/q/dead?cursor="+queryHuge, nil),
		"pause":                      public(http.MethodPost, "/v1/ns/shop/queues/"+pathHuge+"/pause", nil),
		"schedule name":              public(http.MethodPut, "/v1/ns/shop/schedules/"+pathHuge, schedule("paused", false)),
		"schedule cron":              public(http.MethodPut, "/v1/ns/shop/schedules/s", schedule("cron", huge)),
		"schedule time zone":         public(http.MethodPut, "/v1/ns/shop/schedules/s", schedule("timezone", huge)),
		"schedule queue":             public(http.MethodPut, "/v1/ns/shop/schedules/s", map[string]any{"every": 60, "job": map[string]any{"queue": huge}}),
		"task endpoint":              public(http.MethodPost, "/v1/tasks", map[string]any{"endpoint": huge}),
		"task":                       public(http.MethodGet, "/v1/tasks/"+pathHuge, nil),
		"task cancel":                public(http.MethodPost, "/v1/tasks/"+pathHuge+"/cancel", nil),
		"permit":                     public(http.MethodPost, "/v1/permits/check", map[string]any{"permit": huge}),
		"task idempotency key":       header(http.MethodPost, ts.PublicURL+"/v1/tasks", "Idempotency-Key", `{"endpoint":"e"}`),
		"bearer token":               header(http.MethodGet, ts.PublicURL+"/v1/ns/shop/queues", "Authorization", ""),
		"lmstfy token":               header(http.MethodGet, ts.PublicURL+"/api/shop/q?timeout=0", "X-Token", ""),
		"admin bearer token":         header(http.MethodGet, ts.AdminURL+"/v1/namespaces", "Authorization", ""),
		"room status":                public(http.MethodGet, "/v1/rooms/"+pathHuge+"/status", nil),
		"room check":                 public(http.MethodGet, "/v1/rooms/"+pathHuge+"/check", nil),
		"room release":               public(http.MethodPost, "/v1/rooms/"+pathHuge+"/release", nil),
		"lmstfy publish to a queue":  lmstfy(http.MethodPut, "/api/shop/"+pathHuge),
		"lmstfy namespace":           lmstfy(http.MethodPut, "/api/"+pathHuge+"/q"),
		"lmstfy delay":               lmstfy(http.MethodPut, "/api/shop/q?delay="+queryHuge),
		"lmstfy consume":             lmstfy(http.MethodGet, "/api/shop/q?ttr="+queryHuge),
		"lmstfy job":                 lmstfy(http.MethodGet, "/api/shop/q/job/"+pathHuge),
		"lmstfy dead letter":         lmstfy(http.MethodPut, "/api/shop/q/deadletter?limit="+queryHuge),
		"admin room":                 admin(http.MethodPut, "/v1/rooms/"+pathHuge, `{"max_active":1}`),
		"admin room upstream":        admin(http.MethodPut, "/v1/rooms/r", map[string]any{"max_active": 1, "upstream": "https://" + huge}),
		"admin room reset":           admin(http.MethodPost, "/v1/rooms/"+pathHuge+"/reset", nil),
		"admin endpoint":             admin(http.MethodPut, "/v1/endpoints/"+pathHuge, map[string]any{"target_url": "http://example.com/"}),
		"admin endpoint target":      admin(http.MethodPut, "/v1/endpoints/e", map[string]any{"target_url": "https://" + huge}),
		"admin namespace":            admin(http.MethodPost, "/v1/namespaces", map[string]string{"namespace": huge}),
		"admin namespace get":        admin(http.MethodGet, "/v1/namespaces/"+pathHuge, nil),
		"admin namespace delete":     admin(http.MethodDelete, "/v1/namespaces/"+pathHuge, nil),
		"admin quotas":               admin(http.MethodGet, "/v1/namespaces/"+pathHuge+"/quotas", nil),
		"admin set quotas":           admin(http.MethodPut, "/v1/namespaces/"+pathHuge+"/quotas", map[string]any{"max_queues": 1}),
		"admin token description":    admin(http.MethodPost, "/v1/namespaces/shop/tokens", map[string]any{"description": huge}),
		"admin token":                admin(http.MethodDelete, "/v1/namespaces/shop/tokens/"+pathHuge, nil),
		"admin token limit":          admin(http.MethodPut, "/v1/namespaces/shop/tokens/"+pathHuge+"/limit", `{"read":1}`),
		"admin callback settings":    admin(http.MethodGet, "/v1/namespaces/"+pathHuge+"/callbacks", nil),
		"admin callback destination": admin(http.MethodPost, "/v1/namespaces/shop/callbacks/destinations", map[string]any{"prefix": "https://" + huge}),
		"lmstfy admin new token":     admin(http.MethodPost, "/token/"+pathHuge, nil),
		"lmstfy admin description":   admin(http.MethodPost, "/token/shop?description="+queryHuge, nil),
		"lmstfy admin limit":         admin(http.MethodGet, "/token/shop/"+pathHuge+"/limit", nil),
		"dashboard namespace":        page("/ui/ns/" + pathHuge),
		"dashboard queue":            page("/ui/ns/shop/queues/" + pathHuge),
		"dashboard job":              page("/ui/ns/shop/queues/q/jobs/" + pathHuge),
		"dashboard unique key":       page("/ui/ns/shop/queues/q?unique_key=" + queryHuge),
		"dashboard tokens":           page("/ui/tokens?ns=" + queryHuge),
		"dashboard task":             page("/ui/tasks?id=" + queryHuge),
		"dashboard endpoint":         page("/ui/endpoints/" + pathHuge),
		"dashboard room":             page("/ui/rooms/" + pathHuge),
		"dashboard schedules":        page("/ui/schedules?ns=" + queryHuge),
		"dashboard live numbers":     page("/ui/api/ns/" + pathHuge),
		"dashboard action":           func() response { return d.post(t, "/ui/ns/shop/queues/"+pathHuge+"/pause", url.Values{}) },
		"dashboard login": func() response {
			return sendWith(t, noRedirects, http.MethodPost, ts.AdminURL+"/ui/login", nil, url.Values{"token": {huge}})
		},
	} {
		r := send()
		switch {
		case r.Status < 400 || r.Status >= 500:
			t.Errorf("%s: %d %.300s, want a refusal", name, r.Status, r.Body)
		case len(r.Body) > 2048 || strings.Contains(string(r.Body), huge[:256]):
			t.Errorf("%s: %d, a %d-byte answer echoing %d bytes of the input: %.300s", name, r.Status, len(r.Body), strings.Count(string(r.Body), "q"), r.Body)
		}
	}
}
