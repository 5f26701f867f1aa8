package outbound_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sluicehq/sluice/internal/outbound"
)

// BenchmarkSenderDo measures calls per second to a local no-op target over keep-alive connections,
// the engine's own cost under the request queue's end-to-end figure.
func BenchmarkSenderDo(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()
	s, err := outbound.New(outbound.Config{AllowPrivate: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	req := outbound.Request{Method: http.MethodPost, URL: srv.URL + "/run", Body: []byte(`{"n":1}`)}
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := s.Do(b.Context(), req)
			if err != nil || resp.Status != http.StatusOK {
				b.Errorf("status %d, err %v", resp.Status, err)
				return
			}
		}
	})
}

func BenchmarkUnderPrefix(b *testing.B) {
	prefixes := []string{"https://a.com/api", "https://b.com/hooks", "https://c.com:8443/v1"}
	for b.Loop() {
		if !outbound.UnderPrefix("https://c.com:8443/v1/tasks/run?x=1", prefixes...) {
			b.Fatal("not under")
		}
	}
}

// BenchmarkPrefixesMatch is BenchmarkUnderPrefix with the prefixes parsed once (ParsePrefixes).
func BenchmarkPrefixesMatch(b *testing.B) {
	prefixes := outbound.ParsePrefixes([]string{"https://a.com/api", "https://b.com/hooks", "https://c.com:8443/v1"})
	for b.Loop() {
		if prefixes.Match("https://c.com:8443/v1/tasks/run?x=1") != 2 {
			b.Fatal("not under")
		}
	}
}
