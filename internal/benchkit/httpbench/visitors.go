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
			if len(jar) > 0 {
				req.Header.Set("Cookie", cookieHeader(jar))
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
		cookies[i] = cookieHeader(jar)
	}
	return cookies
}

// cookieHeader is the Cookie header that carries the cookies of jar (name to value).
func cookieHeader(jar map[string]string) string {
	parts := make([]string, 0, len(jar))
	for name, value := range jar {
		parts = append(parts, name+"="+value)
	}
	return strings.Join(parts, "; ")
}
