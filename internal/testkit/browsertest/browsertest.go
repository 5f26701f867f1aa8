// Package browsertest drives a real headless Chromium from Go tests (with chromedp), for the pages
// Sluice serves: the waiting room's page and the dashboard. Like redistest, it never skips: a
// machine without Chromium fails the test with the command that installs it.
package browsertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/internal/testkit/testwait"
)

// installHint is what a machine without Chromium needs (Debian's package, as .ci/run installs it).
const installHint = "apt-get install -y chromium"

// binary finds the browser: $SLUICE_TEST_CHROMIUM, else chromium on the PATH, else Debian's path.
func binary() (string, error) {
	if p := os.Getenv("SLUICE_TEST_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium", nil
	}
	return "", errors.New("browsertest: no chromium found (set SLUICE_TEST_CHROMIUM or install it: " + installHint + ")")
}

// Browser is one headless Chromium with one tab, closed when the test ends.
type Browser struct {
	// Ctx is the tab's chromedp context: pass it to chromedp.Run for anything the helpers below
	// do not cover.
	Ctx context.Context
	t   testing.TB
}

// Option changes how New starts the browser.
type Option func(t testing.TB, opts []chromedp.ExecAllocatorOption) []chromedp.ExecAllocatorOption

// OnlyFonts starts the browser with the fonts of the given Debian font packages only (fontconfig
// sees no other font file on the machine; the system's font rules still apply), so a page can be
// checked as a visitor with just those fonts sees it. A package that is not installed fails the test with its install command.
func OnlyFonts(packages ...string) Option {
	return func(t testing.TB, opts []chromedp.ExecAllocatorOption) []chromedp.ExecAllocatorOption {
		t.Helper()
		dir := t.TempDir()
		conf := `<?xml version="1.0"?><!DOCTYPE fontconfig SYSTEM "fonts.dtd"><fontconfig>`
		var dirs []string
		for _, pkg := range packages {
			files, err := fontFiles(pkg)
			if err != nil {
				t.Fatalf("browsertest: %v (install it: apt-get install -y %s)", err, pkg)
			}
			for _, f := range files {
				dirs = append(dirs, filepath.Dir(f))
			}
		}
		slices.Sort(dirs)
		for _, d := range slices.Compact(dirs) {
			conf += "<dir>" + d + "</dir>"
		}
		// The system's rules (which family "sans-serif" and system-ui mean, hinting) still apply.
		conf += `<include ignore_missing="yes">/etc/fonts/conf.d</include>`
		conf += "<cachedir>" + filepath.Join(dir, "cache") + "</cachedir></fontconfig>"
		path := filepath.Join(dir, "fonts.conf")
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		return append(opts, chromedp.Env("FONTCONFIG_FILE="+path))
	}
}

// fontFiles lists the font files a Debian package installed.
func fontFiles(pkg string) ([]string, error) {
	out, err := exec.CommandContext(context.Background(), "dpkg", "-L", pkg).Output() //nolint:gosec // G204: the package names are the test's own constants
	if err != nil {
		return nil, fmt.Errorf("font package %s is not installed", pkg)
	}
	var files []string
	for _, line := range strings.Split(string(out), "\n") {
		switch filepath.Ext(line) {
		case ".ttf", ".otf", ".ttc":
			files = append(files, line)
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("font package %s holds no font file", pkg)
	}
	return files, nil
}

// New starts a fresh browser (its own profile directory) for the test.
func New(t testing.TB, options ...Option) *Browser {
	t.Helper()
	path, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
	}
	for _, o := range options {
		opts = o(t, opts)
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// The first call starts the browser and must not carry a timeout: it would stop the browser.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("browsertest: start %s: %v (install it: %s)", path, err, installHint)
	}
	return &Browser{Ctx: ctx, t: t}
}

// Run runs chromedp actions in order with a one-minute limit and fails the test on an error.
func (b *Browser) Run(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("browsertest: %v", err)
	}
}

// DisableScripts turns the page's JavaScript off (for pages that must work without it); the
// helpers below still read the page.
func (b *Browser) DisableScripts() {
	b.t.Helper()
	b.Run(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
		return err
	}))
}

// Cookies returns the browser's cookies that a request to url would carry (HttpOnly ones too,
// which the page's scripts cannot read).
func (b *Browser) Cookies(url string) []*network.Cookie {
	b.t.Helper()
	var got []*network.Cookie
	b.Run(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		res, err := cdp.Call(ctx, t, network.GetCookies, network.GetCookiesParams{URLs: []string{url}})
		got = res.Cookies
		return err
	}))
	return got
}

// SetCookie stores a cookie in the browser as if url had set it: a saved cookie replayed.
func (b *Browser) SetCookie(url string, c *network.Cookie) {
	b.t.Helper()
	b.Run(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, network.SetCookies, network.SetCookiesParams{Cookies: []*network.CookieParam{{
			Name: c.Name, Value: c.Value, URL: url, Path: c.Path, Secure: c.Secure, HTTPOnly: c.HTTPOnly, SameSite: c.SameSite,
		}}})
		return err
	}))
}

// Viewport makes the tab a phone-sized screen of width × height CSS pixels (touch, mobile
// layout, device scale 1).
func (b *Browser) Viewport(width, height int64) {
	b.t.Helper()
	b.Run(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
			Width: width, Height: height, DeviceScaleFactor: 1, Mobile: true,
		})
		return err
	}))
}

// Screenshot returns a PNG of the tab's viewport.
func (b *Browser) Screenshot() []byte {
	b.t.Helper()
	var png []byte
	b.Run(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		res, err := cdp.Call(ctx, t, page.CaptureScreenshot, page.CaptureScreenshotParams{Format: page.CaptureScreenshotFormatPng})
		png = res.Data
		return err
	}))
	return png
}

// Navigate opens url in the tab and waits for its load event.
func (b *Browser) Navigate(url string) {
	b.t.Helper()
	b.Run(chromedp.Navigate(url))
}

// Eval evaluates a JavaScript expression in the page and returns its value, decoded from JSON.
// An evaluation cut off by a navigation (a click that submitted a form or followed a link) is
// tried again on the page that loads.
func Eval[T any](b *Browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.Ctx, time.Minute)
	defer cancel()
	for {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
		if err == nil {
			return v
		}
		if !cutByNavigation(err) || ctx.Err() != nil {
			b.t.Fatalf("browsertest: evaluate %s: %v", expr, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond): // the next page's context comes with its load
		}
	}
}

// cutByNavigation reports whether an evaluation failed because the page went away under it.
func cutByNavigation(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Inspected target navigated or closed") ||
		strings.Contains(msg, "Execution context was destroyed") ||
		strings.Contains(msg, "Cannot find context with specified id")
}

// Text returns the text content of the first element matching the CSS selector, or "" when there
// is none (without waiting for it to appear).
func (b *Browser) Text(selector string) string {
	b.t.Helper()
	return Eval[string](b, `(function(){var e=document.querySelector(`+quote(selector)+`);return e?e.textContent:""})()`)
}

// Location returns the page's URL.
func (b *Browser) Location() string {
	b.t.Helper()
	return Eval[string](b, `location.href`)
}

// WaitUntil polls cond every 50ms until it returns nil, failing the test with cond's last error
// after within. The page may navigate meanwhile; cond reads it afresh each time.
func (b *Browser) WaitUntil(within time.Duration, cond func() error) {
	b.t.Helper()
	testwait.UntilNilEvery(b.t, within, 50*time.Millisecond, cond)
}

// quote makes a JavaScript string literal of s.
func quote(s string) string {
	out := []byte{'"'}
	for _, r := range s {
		switch r {
		case '"', '\\':
			out = append(out, '\\', byte(r))
		case '\n':
			out = append(out, '\\', 'n')
		default:
			out = append(out, string(r)...)
		}
	}
	return string(append(out, '"'))
}
