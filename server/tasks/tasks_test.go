package tasks

import (
	"encoding/json"
	"errors"
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
	capped := tenant.Token{Namespace: "shop", MaxPriority: 3}
	free := tenant.Token{Namespace: "shop", MaxPriority: -1}

	req := decode(`{"endpoint":"e","body":"text","priority":9,"headers":{"x-a":"1"},"query_params":{"q":"v"}}`)
	p, err := req.params(capped, "")
	if err != nil || string(p.Body) != "text" || p.PriorityCap != 3 || p.Priority != 9 || p.Namespace != "shop" ||
		p.Header.Get("X-A") != "1" || p.Query.Get("q") != "v" || p.Type != relay.Offline {
		t.Fatalf("params %+v %v", p, err)
	}
	jb, b64 := decode(`{"endpoint":"e","body":{"a":1}}`), decode(`{"endpoint":"e","body_base64":"AAE="}`)
	if p, _ := jb.params(free, ""); string(p.Body) != `{"a":1}` || p.PriorityCap != relay.MaxPriority {
		t.Fatalf("JSON body %q, cap %d", p.Body, p.PriorityCap)
	}
	if p, _ := b64.params(free, ""); string(p.Body) != "\x00\x01" {
		t.Fatalf("base64 body %q", p.Body)
	}
	for body, field := range map[string]string{
		`{}`:                                  "endpoint",
		`{"endpoint":"e","task_type":"soon"}`: "tasks[2].task_type",
		`{"endpoint":"e","priority":-1}`:      "tasks[2].priority",
		`{"endpoint":"e","body":"x","body_base64":""}`: "tasks[2].body_base64",
		`{"endpoint":"e","body_base64":"!"}`:           "tasks[2].body_base64",
	} {
		prefix := "tasks[2]."
		if body == `{}` {
			prefix = ""
		}
		r := decode(body)
		_, err := r.params(free, prefix)
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
