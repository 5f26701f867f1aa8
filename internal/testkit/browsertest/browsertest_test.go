package browsertest_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/internal/testkit/browsertest"
)

// TestMain checks that a browser leaves no goroutine behind once its test ends.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBrowserRendersAndRunsScripts(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<!DOCTYPE html><p id="a">static</p><p id="b"></p>
<script>setTimeout(function(){document.getElementById("b").textContent="from \"script\""},100)</script>`))
	}))
	t.Cleanup(srv.Close)
	b := browsertest.New(t)
	b.Navigate(srv.URL)
	if got := b.Text("#a"); got != "static" {
		t.Fatalf("#a = %q", got)
	}
	b.WaitUntil(10*time.Second, func() error {
		if b.Text("#b") != `from "script"` {
			return errors.New("script has not run")
		}
		return nil
	})
	if b.Text("#missing") != "" {
		t.Fatal("a missing element has text")
	}
}
