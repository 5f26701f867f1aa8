package lmstfy

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sluicehq/sluice/internal/httpapi"
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
