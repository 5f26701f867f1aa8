package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/server/servertest"
)

// The task and endpoint commands against a real server and a real HTTP target.
func TestTaskAndEndpointCommands(t *testing.T) {
	t.Parallel()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, "echo "+r.Header.Get("X-A")+" "+string(b))
	}))
	defer target.Close()
	srv := servertest.Start(t, server.Config{AdminToken: testAdminToken, RelayAllowPrivate: true})
	f := &fixture{PublicURL: srv.PublicURL, AdminURL: srv.AdminURL, AdminToken: testAdminToken, NS: "shop"}
	var tok struct{ Token string }
	f.mustJSON(t, &tok, "token", "create", "--ns", "shop", "--perm", "tasks", "--json")
	f.Token = tok.Token

	wantFail(t, f.run(t, "endpoint", "set", "gen"), exitUsage, "--target-url is required")
	wantFail(t, f.run(t, "endpoint", "set", "gen", "--target-url", target.URL, "--qps", "-3"), exitError, "invalid_argument", "qps")
	out := f.must(t, "endpoint", "set", "gen", "--target-url", target.URL, "--qps", "50", "--concurrency", "2", "--timeout", "5s", "--avg-duration", "100ms")
	if !strings.Contains(out, "endpoint gen set") {
		t.Fatalf("endpoint set: %s", out)
	}
	out = f.must(t, "endpoint", "list")
	if !strings.Contains(out, "gen") || !strings.Contains(out, target.URL) {
		t.Fatalf("endpoint list: %s", out)
	}

	out = f.must(t, "task", "submit", "--header", "X-A=1", "--wait", "20s", "gen", "hi")
	if !strings.Contains(out, ": completed") || !strings.Contains(out, "echo 1 hi") {
		t.Fatalf("task submit --wait: %s", out)
	}
	var sub struct {
		TaskID string `json:"task_id"`
	}
	f.mustJSON(t, &sub, "task", "submit", "--json", target.URL+"/x", "-")
	var got struct {
		TaskStatus string `json:"task_status"`
	}
	f.mustJSON(t, &got, "task", "get", "--wait", "20s", "--json", sub.TaskID)
	if got.TaskStatus != "completed" {
		t.Fatalf("task get: %+v", got)
	}
	out = f.must(t, "task", "cancel", sub.TaskID)
	if !strings.Contains(out, "had ended already: completed") {
		t.Fatalf("task cancel: %s", out)
	}
	wantFail(t, f.run(t, "task", "get", "gen.nothing"), exitError, "not_found", "(HTTP 404)")
	wantFail(t, f.run(t, "task", "submit", "nope"), exitError, "not_found")
	wantFail(t, f.run(t, "task", "submit", "--callback", "https://elsewhere.example/hook", "gen", "hi"), exitError,
		"invalid_argument", "callback.url")
	out = f.must(t, "endpoint", "get", "gen")
	if !strings.Contains(out, "gen") {
		t.Fatalf("endpoint get: %s", out)
	}
	f.must(t, "endpoint", "delete", "gen")
	wantFail(t, f.run(t, "endpoint", "get", "gen"), exitError, "not_found")

	// Permit bindings.
	var bound struct {
		PermitMethods    []string `json:"permit_methods"`
		PermitPathPrefix string   `json:"permit_path_prefix"`
	}
	f.mustJSON(t, &bound, "endpoint", "set", "--json", "--target-url", target.URL, "--permit-methods", "POST,PUT",
		"--permit-path-prefix", "/v1/draw", "bound")
	if strings.Join(bound.PermitMethods, ",") != "POST,PUT" || bound.PermitPathPrefix != "/v1/draw" {
		t.Fatalf("endpoint set with permit bindings: %+v", bound)
	}
	wantFail(t, f.run(t, "endpoint", "set", "--target-url", target.URL, "--permit-path-prefix", "v1", "bad"), exitError,
		"invalid_argument", "permit_path_prefix")
}
