package httpbench

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Visitors returns n Cookie headers, one a visitor, each taken from a real visit of url: the
// first request gets the visitor's cookies (a waiting room's visitor cookie, say), the second
// carries them and gets what they lead to (its pass). A benchmark's requests then carry what a
// browser would send.
func Visitors(tb testing.TB, url string, n int) []string {
	tb.Helper()
	cookies := make([]string, n)
	for i := range cookies {
		jar := map[string]string{}
		for range 2 {
			req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
			if err != nil {
				tb.Fatal(err)
			}
			for name, value := range jar {
				req.AddCookie(&http.Cookie{Name: name, Value: value})
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				tb.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			for _, c := range resp.Cookies() {
				jar[c.Name] = c.Value
			}
		}
		parts := make([]string, 0, len(jar))
		for name, value := range jar {
			parts = append(parts, name+"="+value)
		}
		cookies[i] = strings.Join(parts, "; ")
	}
	return cookies
}
