package lmstfy

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// encodingJSON is what httpapi.WriteJSON would send for v.
func encodingJSON(t *testing.T, v any) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
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
