package waitroom_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/waitroom"
)

// keptCookies is a client that ignores every Set-Cookie: it sends the cookies it was given on
// every request (a script, or a browser extension replaying them).
type keptCookies struct {
	client  *http.Client
	cookies []*http.Cookie
}

func (k keptCookies) do(t *testing.T, url string, header map[string]string) response {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range k.cookies {
		req.AddCookie(c)
	}
	for name, v := range header {
		req.Header.Set(name, v)
	}
	res, err := k.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{code: res.StatusCode, header: res.Header, body: string(body)}
}

// A released visitor whose client keeps its pass and visitor cookies (and drops the left cookie)
// is refused, although the room has free places: its pass no longer admits it (the touch refuses
// it, on the instance that released it at once and on another at its first touch), and its
// arrivals answer "left" for the left window instead of admitting it again; through the
// middleware, the proxy (the lean loop) and the nginx check alike. After the window it comes in
// like anyone, and its passes are good again.
func TestReleasedVisitorKeepingItsCookiesIsRefused(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		keys := [][]byte{testKey()}
		// The other instance touches often, so that its refusal comes well within the left
		// window (by default 30 s against a 5 s TouchInterval).
		one := newClient(t, env, waitroom.Config{PassKeys: keys, LeftWindow: 10 * time.Second})
		two := newClient(t, env, waitroom.Config{PassKeys: keys, LeftWindow: 10 * time.Second, TouchInterval: 100 * time.Millisecond})
		up := newUpstream(t)
		room := newRoom(t, one, waitroom.RoomConfig{MaxActive: 5, Upstream: up.URL})
		viaMiddleware := httptest.NewServer(waitroom.Middleware(room, up.Config.Handler))
		t.Cleanup(viaMiddleware.Close)
		viaProxy := serveProxy(t, handle(t, two, "r"), nil)
		mux := http.NewServeMux()
		two.Handler(waitroom.HandlerConfig{}).Register(mux)
		viaNginxCheck := httptest.NewServer(mux)
		t.Cleanup(viaNginxCheck.Close)

		alice := browser(t)
		if r := do(t, alice, "GET", viaMiddleware.URL+"/shop", nil); r.code != 200 || !strings.Contains(r.body, "upstream page") {
			t.Fatalf("alice's first visit: %d %q", r.code, r.body)
		}
		var kept keptCookies
		kept.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		var pass string
		for _, c := range alice.Jar.Cookies(mustURL(t, viaMiddleware.URL)) {
			switch c.Name {
			case "sluice_pass_r":
				pass = c.Value
				kept.cookies = append(kept.cookies, c)
			case "sluice_visitor":
				kept.cookies = append(kept.cookies, c)
			}
		}
		p, ok := room.CheckPass(pass)
		if !ok || len(kept.cookies) != 2 {
			t.Fatalf("alice's cookies %v, pass valid %v; want a pass and a visitor cookie", kept.cookies, ok)
		}
		// Her pass works on the other instance's proxy before the release.
		if r := kept.do(t, viaProxy.URL+"/before", nil); r.code != 200 || !strings.Contains(r.body, "upstream page") {
			t.Fatalf("alice's kept pass at the proxy before her release: %d %q", r.code, r.body)
		}
		if r := do(t, alice, "GET", viaMiddleware.URL+"/checkout?release=1", nil); r.code != 200 {
			t.Fatalf("alice's release: %d", r.code)
		}

		// The instance that released her: the middleware.
		if r := kept.do(t, viaMiddleware.URL+"/cart", nil); r.code != http.StatusServiceUnavailable || !strings.Contains(r.body, "You have left the line") {
			t.Fatalf("kept cookies at the middleware after the release: %d %q", r.code, r.body)
		}
		if s := statusOf(t, kept.do(t, viaMiddleware.URL+"/cart", jsonPoll)); s.State != "left" {
			t.Fatalf("kept cookies' poll after the release: %+v", s)
		}
		// Another instance, its proxy (lean loop) and its nginx check: its touch made before the
		// release stands until its TouchInterval is over; the next asks Redis, which refuses.
		testwait.UntilNil(t, time.Minute, func() error {
			if r := kept.do(t, viaProxy.URL+"/after", nil); r.code != http.StatusServiceUnavailable {
				return fmt.Errorf("kept cookies at the other instance's proxy after the release: %d %q", r.code, r.body)
			}
			return nil
		})
		hits := up.hits.Load()
		if r := kept.do(t, viaProxy.URL+"/again", nil); r.code != http.StatusServiceUnavailable || !strings.Contains(r.body, "You have left the line") {
			t.Fatalf("kept cookies at the other instance's proxy once refused: %d %q", r.code, r.body)
		}
		if r := kept.do(t, viaNginxCheck.URL+"/v1/rooms/r/check", nil); r.code != http.StatusUnauthorized {
			t.Fatalf("kept cookies at the nginx check after the release: %d", r.code)
		}
		if s := statusOf(t, kept.do(t, viaNginxCheck.URL+"/v1/rooms/r/status", nil)); s.State != "left" {
			t.Fatalf("kept cookies' status after the release: %+v", s)
		}
		if n := up.hits.Load(); n != hits {
			t.Fatalf("the upstream served %d requests of the released visitor once its pass was refused", n-hits)
		}
		if s, err := room.Stats(context.Background()); err != nil || s.Active != 0 || s.Waiting != 0 {
			t.Fatalf("room %+v, %v; want nobody inside or in line (five free places)", s, err)
		}
		// The room had free places all along: anyone else comes in.
		if st, err := room.Arrive(context.Background(), "bob"); err != nil || st.State != waitroom.Admitted {
			t.Fatalf("bob: %+v, %v; want admitted", st, err)
		}

		// After the left window alice arrives like anyone (admitted: places are free), and her
		// passes admit her again.
		testwait.UntilNil(t, time.Minute, func() error {
			if st, err := room.Arrive(context.Background(), p.Visitor); err != nil || st.State != waitroom.Admitted {
				return fmt.Errorf("alice after the window: %+v, %w", st, err)
			}
			return nil
		})
		if r := kept.do(t, viaNginxCheck.URL+"/v1/rooms/r/check", nil); r.code != http.StatusOK {
			t.Fatalf("alice's pass at the nginx check once admitted again: %d", r.code)
		}
	})
}
