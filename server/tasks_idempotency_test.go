package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/server/tasks"
)

// submitKeyed posts one task with the given Idempotency-Key headers (none, one or several).
func (ts *testServer) submitKeyed(t *testing.T, token string, keys []string, body any) response {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, ts.PublicURL+"/v1/tasks", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header[tasks.IdempotencyKeyHeader] = keys
	return exchange(t, noRedirects, req)
}

// queuedAt is the endpoint's number of waiting tasks, from the admin API.
func (ts *testServer) queuedAt(t *testing.T, endpoint string) int64 {
	t.Helper()
	var st tasks.EndpointWithStats
	r := ts.adminDo(t, http.MethodGet, "/v1/endpoints/"+endpoint, nil)
	wantStatus(t, r, http.StatusOK, "")
	r.JSON(t, &st)
	return st.Stats.Queued
}

func TestTaskIdempotencyKeyOverHTTP(t *testing.T) {
	t.Parallel()
	ts := relayServer(t, noDispatch)
	ts.putEndpoint(t, "gen", map[string]any{"target_url": "http://127.0.0.1:9/api"})
	alice := ts.taskToken(t, "shop", -1)
	body := map[string]any{"endpoint": "gen", "body": map[string]any{"order": 42}, "priority": 3}

	r := ts.submitKeyed(t, alice, []string{"order-42"}, body)
	wantStatus(t, r, http.StatusCreated, "")
	var first tasks.SubmitResponse
	r.JSON(t, &first)

	// A resend: 200, the same task, nothing new.
	r = ts.submitKeyed(t, alice, []string{"order-42"}, body)
	wantStatus(t, r, http.StatusOK, "")
	var again tasks.SubmitResponse
	r.JSON(t, &again)
	if again.TaskID != first.TaskID || again.TaskStatus != "pending" || again.Priority != first.Priority || !again.CreatedAt.Equal(first.CreatedAt) {
		t.Fatalf("resend answered %+v, want the first task %+v", again, first)
	}

	// The same key with another body: 409 conflict, nothing new.
	r = ts.submitKeyed(t, alice, []string{"order-42"}, map[string]any{"endpoint": "gen", "body": map[string]any{"order": 43}, "priority": 3})
	wantStatus(t, r, http.StatusConflict, "conflict")
	if n := ts.queuedAt(t, "gen"); n != 1 {
		t.Fatalf("%d tasks queued after a resend and a conflict, want 1", n)
	}

	// Another token of the namespace, and a token of another namespace, replaying alice's key
	// and body, get tasks of their own: never alice's.
	for _, tok := range []string{ts.taskToken(t, "shop", -1), ts.taskToken(t, "rival", -1)} {
		r = ts.submitKeyed(t, tok, []string{"order-42"}, body)
		wantStatus(t, r, http.StatusCreated, "")
		var other tasks.SubmitResponse
		r.JSON(t, &other)
		if other.TaskID == first.TaskID {
			t.Fatalf("another token's replay of the key got the first token's task %s", first.TaskID)
		}
	}
	if n := ts.queuedAt(t, "gen"); n != 3 {
		t.Fatalf("%d tasks queued, want 3 (one per token)", n)
	}
}

// Malformed, huge, repeated and empty keys, and a key with a batch, are 400 naming the field, and
// queue nothing; the key is a header, never a body field.
func TestTaskIdempotencyKeyBadInput(t *testing.T) {
	t.Parallel()
	ts := relayServer(t, noDispatch)
	ts.putEndpoint(t, "gen", map[string]any{"target_url": "http://127.0.0.1:9/api"})
	tok := ts.taskToken(t, "shop", -1)
	one := map[string]any{"endpoint": "gen"}
	for _, c := range []struct {
		name string
		keys []string
		body any
	}{
		{"too long", []string{strings.Repeat("k", 256)}, one},
		{"huge", []string{strings.Repeat("k", 64<<10)}, one},
		{"space", []string{"two words"}, one},
		{"not ASCII", []string{"clé"}, one},
		{"empty", []string{""}, one},
		{"repeated", []string{"a", "b"}, one},
		{"with a batch", []string{"batch-1"}, map[string]any{"tasks": []any{one, one}}},
	} {
		r := ts.submitKeyed(t, tok, c.keys, c.body)
		wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
		if r.ErrorField() != "idempotency_key" {
			t.Fatalf("%s: field %q, want idempotency_key (%s)", c.name, r.ErrorField(), r.Body)
		}
	}
	r := ts.submitKeyed(t, tok, nil, map[string]any{"endpoint": "gen", "idempotency_key": "from-the-body"})
	wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
	if n := ts.queuedAt(t, "gen"); n != 0 {
		t.Fatalf("%d tasks queued by refused requests", n)
	}
}
