package server

import (
	"net/http"
	"strings"
	"testing"
)

// A hostile client that sends a 900 KB queue name, room name or namespace gets its
// refusal in a small body: no error echoes more than about 200 bytes of an input.
func TestErrorBodiesEchoLittleOfHugeInputs(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.token(t, "shop")
	queueName := strings.Repeat("q", 900<<10)
	roomName := strings.Repeat("r", 900<<10)
	for _, c := range []struct {
		name string
		r    func() response
	}{
		{"consume", func() response {
			return ts.public(t, http.MethodPost, "/v1/ns/shop/consume", tok, map[string]any{"queues": []string{queueName}})
		}},
		{"publish to a queue with spaces", func() response {
			return ts.public(t, http.MethodPost, "/v1/ns/shop/queues/"+strings.Repeat("a%20", 200<<10)+"/jobs", tok, `{"payload":1}`)
		}},
		{"room status", func() response { return ts.public(t, http.MethodGet, "/v1/rooms/"+roomName+"/status", "", nil) }},
		{"admin room", func() response { return ts.adminDo(t, http.MethodPut, "/v1/rooms/"+roomName, `{"max_active":1}`) }},
		{"quotas of a namespace", func() response { return ts.adminDo(t, http.MethodGet, "/v1/namespaces/"+queueName+"/quotas", nil) }},
		{"set quotas of a namespace", func() response {
			return ts.adminDo(t, http.MethodPut, "/v1/namespaces/"+queueName+"/quotas", map[string]any{"max_queues": 1})
		}},
		{"endpoint", func() response {
			return ts.adminDo(t, http.MethodPut, "/v1/endpoints/"+queueName, map[string]any{"target_url": "http://example.com/"})
		}},
		{"namespace", func() response {
			return ts.adminDo(t, http.MethodPost, "/v1/namespaces", map[string]string{"namespace": queueName})
		}},
	} {
		r := c.r()
		if r.Status != http.StatusBadRequest && r.Status != http.StatusNotFound {
			t.Errorf("%s: %d %.300s, want a 400 or 404", c.name, r.Status, r.Body)
		}
		if len(r.Body) > 1200 {
			t.Errorf("%s: a %d-byte error body: %.300s", c.name, len(r.Body), r.Body)
		}
	}
}
