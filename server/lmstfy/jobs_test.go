package lmstfy

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sluicehq/sluice/server/internal/httpapi"
)

// encodingJSON is what httpapi.WriteJSON, the reflection-based writer, sends for v: the hand-written
// answers must match it byte for byte.
func encodingJSON(t *testing.T, v any) string {
	t.Helper()
	rec := httptest.NewRecorder()
	httpapi.WriteJSON(rec, http.StatusOK, v)
	if rec.Code != http.StatusOK {
		t.Fatalf("WriteJSON(%v): %d %s", v, rec.Code, rec.Body)
	}
	return rec.Body.String()
}

func TestWriteLmstfyPublishedMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	writePublished(rec, "01JAX3")
	want := encodingJSON(t, map[string]string{"msg": "published", "job_id": "01JAX3"})
	if rec.Code != http.StatusCreated || rec.Body.String() != want {
		t.Fatalf("got %d %s, want 201 %s", rec.Code, rec.Body, want)
	}
}

func TestWriteLmstfyJobMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	jobs := map[string]jobJSON{
		"consumed": {Msg: "new job", Namespace: "shop", Queue: "mail", JobID: "01JAX3", Data: []byte("hello"),
			TTL: 59, ElapsedMS: 1234, RemainTries: 2},
		"peeked, no msg":     {Namespace: "shop", Queue: "mail", JobID: "01JAX3", Data: []byte{}},
		"binary data":        {Msg: "new job", Namespace: "n", Queue: "q", JobID: "x", Data: []byte{0, 0xff, '"', '<', 1, 2, 3}},
		"no data":            {Msg: "new job", Namespace: "n", Queue: "q", JobID: "x"},
		"negative and large": {Msg: "new job", Namespace: "n", Queue: "q", JobID: "x", Data: []byte("{}"), ElapsedMS: -3, TTL: 1 << 40},
		"attributes": {Msg: "new job", Namespace: "n", Queue: "q", JobID: "x", Data: []byte("a"),
			Attributes: map[string]string{"zeta": "1", "alpha": `quote " and \ <html> & é`, "tab\tkey": "\n", "": "empty"}},
		"empty attributes": {Msg: "new job", Namespace: "n", Queue: "q", JobID: "x", Data: []byte("a"), Attributes: map[string]string{}},
		"unicode names":    {Msg: "new job", Namespace: "ns-é", Queue: "q\u2028", JobID: "id\"1", Data: []byte("a")},
	}
	for name, j := range jobs {
		t.Run(name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			writeJob(rec, j)
			want := encodingJSON(t, j)
			if rec.Code != http.StatusOK || rec.Body.String() != want {
				t.Fatalf("got %d %s\nwant 200 %s", rec.Code, rec.Body, want)
			}
			if got := rec.Header().Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type %q", got)
			}
		})
	}
}
