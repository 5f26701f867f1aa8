package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/nginxtest"
	"github.com/sluicehq/sluice/relay"
	"github.com/sluicehq/sluice/server/tasks"
)

// upstream is an endpoint behind the gateway, counting the calls that reach it.
type upstream struct {
	*httptest.Server
	calls atomic.Int64
}

func newUpstream(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.calls.Add(1)
		_, _ = w.Write([]byte("task " + r.Header.Get("Sluice-Task-Id")))
	}))
	t.Cleanup(u.Close)
	return u
}

// permitGateway runs the shipped deploy/nginx-permit.conf with a real nginx in front of the
// endpoints imagegen and transcribe, checking permits with the server at sluiceAddr, and returns
// the gateway's base URL.
func permitGateway(t *testing.T, sluiceAddr string, imagegen, transcribe *upstream) string {
	t.Helper()
	example, err := os.ReadFile(filepath.Join("..", "deploy", "nginx-permit.conf"))
	if err != nil {
		t.Fatal(err)
	}
	listen, _ := nginxtest.Run(t, 256, func(listen string) (string, map[string]string) {
		r := strings.NewReplacer(
			"server 127.0.0.1:7777;", "server "+sluiceAddr+";",
			"server 127.0.0.1:8081;", "server "+imagegen.Listener.Addr().String()+";",
			"server 127.0.0.1:8082;", "server "+transcribe.Listener.Addr().String()+";",
			"listen 8080;", "listen "+listen+";",
		)
		conf := r.Replace(string(example))
		for _, addr := range []string{"127.0.0.1:7777;", "127.0.0.1:8081;", "127.0.0.1:8082;", "listen 8080;"} {
			if strings.Contains(conf, addr) || !strings.Contains(string(example), addr) {
				t.Fatalf("the example config no longer has %q where the test replaces it", addr)
			}
		}
		return "include %[1]s/permit.conf;", map[string]string{"permit.conf": conf}
	})
	return "http://" + listen
}

// through sends method site+target (the path exactly as written) with the permit and extra
// headers through the gateway.
func through(t *testing.T, method, site, target, permit string, h map[string]string) response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), method, site, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.URL.Opaque = target
	if permit != "" {
		req.Header.Set(relay.PermitHeader, permit)
	}
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// The shipped nginx config, through a real nginx, holds each permit to its endpoint: a permit of
// the idle endpoint transcribe cannot buy a call to imagegen (not even with a forged
// Sluice-Endpoint header), and at transcribe it admits one call, once. imagegen binds its permits
// to POST under /imagegen/draw, which no method, path or header trick gets around. None of the
// refusals uses the permit up.
func TestPermitGatewayHoldsPermitsToTheirEndpoint(t *testing.T) {
	t.Parallel()
	imagegen, transcribe := newUpstream(t), newUpstream(t)
	ts := relayServer(t)
	ts.putEndpoint(t, "imagegen", map[string]any{"target_url": imagegen.URL + "/imagegen", "concurrency": 1,
		"permit_methods": []string{"POST"}, "permit_path_prefix": "/imagegen/draw"})
	ts.putEndpoint(t, "transcribe", map[string]any{"target_url": transcribe.URL + "/transcribe", "concurrency": 1})
	site := permitGateway(t, strings.TrimPrefix(ts.PublicURL, "http://"), imagegen, transcribe)
	tok := ts.taskToken(t, "shop", -1)
	permitOf := func(endpoint string) tasks.TaskResponse {
		t.Helper()
		id := ts.submit(t, tok, map[string]any{"endpoint": endpoint, "task_type": "online"}).TaskID
		task := ts.task(t, tok, id, "?wait=20s")
		if task.TaskStatus != "permitted" || task.Permit == "" {
			t.Fatalf("online task of %s: %+v", endpoint, task)
		}
		return task
	}
	tr, ig := permitOf("transcribe"), permitOf("imagegen")

	// transcribe's permit at imagegen's location: refused, with or without a forged header.
	for _, h := range []map[string]string{nil, {"Sluice-Endpoint": "transcribe"}, {"X-Original-URI": "/transcribe/x"}} {
		r := through(t, http.MethodPost, site, "/imagegen/draw", tr.Permit, h)
		if r.Status != http.StatusForbidden || imagegen.calls.Load() != 0 {
			t.Fatalf("transcribe's permit at imagegen (headers %v): %d %s (imagegen called %d times)", h, r.Status, r.Body, imagegen.calls.Load())
		}
	}
	// No permit, a forged one.
	if r := through(t, http.MethodGet, site, "/transcribe/x", "", nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("no permit: %d %s", r.Status, r.Body)
	}
	if r := through(t, http.MethodGet, site, "/transcribe/x", tr.Permit[:len(tr.Permit)-4]+"AAAA", nil); r.Status != http.StatusForbidden {
		t.Fatalf("forged permit: %d %s", r.Status, r.Body)
	}
	// At its own endpoint: one call, then refused.
	r := through(t, http.MethodGet, site, "/transcribe/x", tr.Permit, nil)
	if r.Status != http.StatusOK || string(r.Body) != "task "+tr.TaskID || transcribe.calls.Load() != 1 {
		t.Fatalf("transcribe's permit at transcribe: %d %q (calls %d)", r.Status, r.Body, transcribe.calls.Load())
	}
	if r := through(t, http.MethodGet, site, "/transcribe/x", tr.Permit, nil); r.Status != http.StatusForbidden || transcribe.calls.Load() != 1 {
		t.Fatalf("replayed permit: %d %s (calls %d)", r.Status, r.Body, transcribe.calls.Load())
	}

	// imagegen's own permit outside what imagegen admits.
	for _, c := range []struct {
		method, target string
		h              map[string]string
	}{
		{http.MethodGet, "/imagegen/draw", nil},
		{http.MethodPost, "/imagegen/admin", nil},
		{http.MethodPost, "/imagegen/admin", map[string]string{"X-Original-URI": "/imagegen/draw", "X-Original-Method": "POST"}},
		{http.MethodPost, "/imagegen/draw/../admin", nil},
		{http.MethodPost, "/imagegen/draw/%2e%2e/admin", nil},
		{http.MethodPost, "/imagegen/drawings", nil},
	} {
		if r := through(t, c.method, site, c.target, ig.Permit, c.h); r.Status != http.StatusForbidden || imagegen.calls.Load() != 0 {
			t.Fatalf("%s %s (headers %v) with imagegen's permit: %d %s (imagegen called %d times)", c.method, c.target, c.h,
				r.Status, r.Body, imagegen.calls.Load())
		}
	}
	if r := through(t, http.MethodPost, site, "/imagegen/draw/lighthouse?size=4", ig.Permit, nil); r.Status != http.StatusOK || imagegen.calls.Load() != 1 {
		t.Fatalf("POST /imagegen/draw/lighthouse with its permit: %d %s (calls %d)", r.Status, r.Body, imagegen.calls.Load())
	}
	if r := through(t, http.MethodPost, site, "/imagegen/draw/lighthouse", ig.Permit, nil); r.Status != http.StatusForbidden || imagegen.calls.Load() != 1 {
		t.Fatalf("replayed imagegen permit: %d %s", r.Status, r.Body)
	}
}

// The permit check itself: it needs the endpoint the gateway guards; a permit of another endpoint
// is a 403 permit_mismatch and stays unused; an endpoint named twice differently (a caller's
// forged header beside the gateway's parameter) is refused; another namespace's token cannot
// report the task done even with its permit.
func TestPermitCheckNeedsTheGatewaysEndpoint(t *testing.T) {
	t.Parallel()
	ts := relayServer(t)
	ts.putEndpoint(t, "busy", map[string]any{"target_url": "http://127.0.0.1:9/busy", "concurrency": 1})
	ts.putEndpoint(t, "idle", map[string]any{"target_url": "http://127.0.0.1:9/idle", "concurrency": 1})
	tok := ts.taskToken(t, "shop", -1)
	id := ts.submit(t, tok, map[string]any{"endpoint": "idle", "task_type": "online"}).TaskID
	task := ts.task(t, tok, id, "?wait=20s")
	if task.Permit == "" {
		t.Fatalf("online task: %+v", task)
	}
	check := ts.PublicURL + "/v1/permits/check"
	permit := map[string]string{relay.PermitHeader: task.Permit}
	for _, c := range []struct {
		url    string
		h      map[string]string
		status int
		code   string
	}{
		{check, permit, http.StatusBadRequest, "invalid_argument"},
		{check + "?endpoint=", permit, http.StatusBadRequest, "invalid_argument"},
		{check + "?endpoint=no%20such", permit, http.StatusBadRequest, "invalid_argument"},
		{check + "?endpoint=" + strings.Repeat("e", 100), permit, http.StatusBadRequest, "invalid_argument"},
		{check + "?endpoint=busy", permit, http.StatusForbidden, "permit_mismatch"},
		{check, map[string]string{relay.PermitHeader: task.Permit, tasks.EndpointHeader: "busy"}, http.StatusForbidden, "permit_mismatch"},
		{check + "?endpoint=busy", map[string]string{relay.PermitHeader: task.Permit, tasks.EndpointHeader: "idle"}, http.StatusForbidden, "permit_mismatch"},
		{check + "?endpoint=idle", map[string]string{relay.PermitHeader: task.Permit, tasks.EndpointHeader: "busy"}, http.StatusForbidden, "permit_mismatch"},
		{check + "?endpoint=idle&endpoint=busy", permit, http.StatusForbidden, "permit_mismatch"},
		{check + "?endpoint=busy", nil, http.StatusUnauthorized, "unauthenticated"},
	} {
		r := doHeader(t, http.MethodGet, c.url, c.h)
		if r.Status != c.status || r.ErrorCode() != c.code {
			t.Fatalf("GET %s %v: %d %s; want %d %s", c.url, c.h, r.Status, r.Body, c.status, c.code)
		}
		if c.code == "invalid_argument" && r.ErrorField() != "endpoint" {
			t.Fatalf("GET %s: field %q, want endpoint", c.url, r.ErrorField())
		}
	}
	// Another namespace's token learns nothing of the task and cannot end it, permit or not.
	other := ts.taskToken(t, "rival", -1)
	wantStatus(t, ts.public(t, http.MethodPost, "/v1/tasks/"+id+"/done", other, map[string]any{"permit": task.Permit}), http.StatusNotFound, "not_found")
	wantStatus(t, ts.public(t, http.MethodGet, "/v1/tasks/"+id, other, nil), http.StatusNotFound, "not_found")
	// Unused by all of it: the right check admits it once.
	r := doHeader(t, http.MethodGet, check+"?endpoint=idle", permit)
	wantStatus(t, r, http.StatusOK, "")
	if r.Header.Get(tasks.EndpointHeader) != "idle" || r.Header.Get("Sluice-Task-Id") != id {
		t.Fatalf("check headers %v", r.Header)
	}
	wantStatus(t, doHeader(t, http.MethodGet, check+"?endpoint=idle", permit), http.StatusForbidden, "permit_refused")
	// An endpoint that binds its permits to methods and a path needs them from the gateway.
	ts.putEndpoint(t, "bound", map[string]any{"target_url": "http://127.0.0.1:9/bound", "permit_methods": []string{"POST"},
		"permit_path_prefix": "/bound"})
	id3 := ts.submit(t, tok, map[string]any{"endpoint": "bound", "task_type": "online"}).TaskID
	p3 := ts.task(t, tok, id3, "?wait=20s").Permit
	for header, sent := range map[string]map[string]string{
		tasks.OriginalMethodHeader: {relay.PermitHeader: p3, tasks.OriginalURIHeader: "/bound/x"},
		tasks.OriginalURIHeader:    {relay.PermitHeader: p3, tasks.OriginalMethodHeader: "POST"},
	} {
		r := doHeader(t, http.MethodGet, check+"?endpoint=bound", sent)
		wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
		if r.ErrorField() != header {
			t.Fatalf("check without %s: field %q", header, r.ErrorField())
		}
	}
	wantStatus(t, doHeader(t, http.MethodGet, check+"?endpoint=bound", map[string]string{relay.PermitHeader: p3,
		tasks.OriginalMethodHeader: "POST", tasks.OriginalURIHeader: "/bound/x"}), http.StatusOK, "")
	// The header form, as the shipped nginx config sends it, is the same check.
	id2 := ts.submit(t, tok, map[string]any{"endpoint": "busy", "task_type": "online"}).TaskID
	p2 := ts.task(t, tok, id2, "?wait=20s").Permit
	wantStatus(t, doHeader(t, http.MethodGet, check, map[string]string{relay.PermitHeader: p2, tasks.EndpointHeader: "busy"}), http.StatusOK, "")
}
