package tasks

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/relay"
	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/tenant"
)

func TestParams(t *testing.T) {
	t.Parallel()
	decode := func(s string) submitRequest {
		var r submitRequest
		if err := json.Unmarshal([]byte(s), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	a := &API{cfg: Config{DefaultMaxPriority: 2}}
	capped := a.submitter(tenant.Token{ID: "0123456789abcdef", Namespace: "shop", MaxPriority: 3})
	uncapped := a.submitter(tenant.Token{ID: "0123456789abcdef", Namespace: "shop", MaxPriority: -1})
	delegate := a.submitter(tenant.Token{ID: "fedcba9876543210", Namespace: "shop", MaxPriority: -1,
		Permissions: []tenant.Permission{tenant.PermTasks, tenant.PermTasksDelegate}})

	req := decode(`{"endpoint":"e","body":"text","priority":9,"headers":{"x-a":"1"},"query_params":{"q":"v"}}`)
	p, err := req.params(capped, "")
	if err != nil || string(p.Body) != "text" || p.PriorityCap != 3 || p.Priority != 9 || p.Namespace != "shop" ||
		p.Header.Get("X-A") != "1" || p.Query.Get("q") != "v" || p.Type != relay.Offline {
		t.Fatalf("params %+v %v", p, err)
	}
	jb, b64 := decode(`{"endpoint":"e","body":{"a":1}}`), decode(`{"endpoint":"e","body_base64":"AAE="}`)
	if p, _ := jb.params(uncapped, ""); string(p.Body) != `{"a":1}` || p.PriorityCap != 2 {
		t.Fatalf("JSON body %q, cap %d; want the server's default cap 2 for a token without one", p.Body, p.PriorityCap)
	}
	if p, _ := b64.params(uncapped, ""); string(p.Body) != "\x00\x01" {
		t.Fatalf("base64 body %q", p.Body)
	}
	// The fairness subject: the token, whatever the body says, unless it may delegate.
	for _, c := range []struct {
		who           submitter
		body          string
		subject, gsub string
	}{
		{capped, `{"endpoint":"e","subject":"alice"}`, "0123456789abcdef", "alice"},
		{capped, `{"endpoint":"e"}`, "0123456789abcdef", ""},
		{delegate, `{"endpoint":"e","subject":"alice"}`, "fedcba9876543210/alice", "alice"},
		{delegate, `{"endpoint":"e"}`, "fedcba9876543210", ""},
	} {
		r := decode(c.body)
		if p, err := r.params(c.who, ""); err != nil || p.Subject != c.subject || p.GrantSubject != c.gsub {
			t.Errorf("%s (delegate %v): subject %q, grant subject %q, %v; want %q, %q", c.body, c.who.delegate, p.Subject, p.GrantSubject, err, c.subject, c.gsub)
		}
	}
	for body, field := range map[string]string{
		`{}`:                                  "endpoint",
		`{"endpoint":"e","task_type":"soon"}`: "tasks[2].task_type",
		`{"endpoint":"e","priority":-1}`:      "tasks[2].priority",
		`{"endpoint":"e","body":"x","body_base64":""}`:                           "tasks[2].body_base64",
		`{"endpoint":"e","body_base64":"!"}`:                                     "tasks[2].body_base64",
		`{"endpoint":"e","subject":"a\u0000b"}`:                                  "tasks[2].subject",
		`{"endpoint":"e","subject":"` + strings.Repeat("s", MaxSubject+1) + `"}`: "tasks[2].subject",
	} {
		prefix := "tasks[2]."
		if body == `{}` {
			prefix = ""
		}
		r := decode(body)
		_, err := r.params(delegate, prefix)
		var e *httpapi.Error
		if !errors.As(err, &e) || e.Field != field {
			t.Errorf("%s: %v, want a field error naming %s", body, err, field)
		}
	}
}

func TestParseWait(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{"30s": 30 * time.Second, "1.5": 1500 * time.Millisecond, "0": 0} {
		if got, err := parseWait(in); err != nil || got != want {
			t.Errorf("parseWait(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"soon", "-1s", "-2", "NaN", "nan", "Inf", "1e300"} {
		if _, err := parseWait(in); err == nil {
			t.Errorf("parseWait(%q) took it", in)
		}
	}
}
