package waitroom_test

import (
	"bytes"
	"fmt"
	"image/png"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/browsertest"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/waitroom"
)

// phoneWidth is the narrowest phone the page is laid out for (CSS pixels).
const phoneWidth = 360

// TestPageOnPhoneInEveryLanguage reads the waiting page as a visitor on a 360 px wide phone does,
// in every built-in language picked with the page's own switch: the words are the language's,
// the ETA (from the room's new_users_per_minute, before anyone was admitted) fits one line, nothing
// is wider than the screen, and the progress bar tells screen readers the place shown. It runs
// once with Debian's default fonts only (no CJK font: Chinese and Japanese glyphs are missing
// boxes, and the layout must hold anyway) and once with Noto CJK, where the Chinese and Japanese
// glyphs must come from a real CJK font.
func TestPageOnPhoneInEveryLanguage(t *testing.T) {
	t.Parallel()
	for _, fonts := range []struct {
		name     string
		packages []string
	}{
		{"debian-default-fonts", []string{"fonts-dejavu-core"}},
		{"noto-cjk", []string{"fonts-dejavu-core", "fonts-noto-cjk"}},
	} {
		t.Run(fonts.name, func(t *testing.T) {
			t.Parallel()
			env := redistest.New(t)
			c := newClient(t, env, waitroom.Config{PollInterval: 200 * time.Millisecond, PollsPerMinute: 100_000})
			const site = `Müller & Söhne <b>Shop</b>`
			room := newRoom(t, c, waitroom.RoomConfig{MaxActive: 1, NewUsersPerMinute: 600, SiteName: site, LogoURL: "https://cdn.example/logo.svg?a=1&b=2"})
			up := newUpstream(t)
			srv := httptest.NewServer(waitroom.Middleware(room, up.Config.Handler))
			t.Cleanup(srv.Close)
			// One visitor holds the only place and one waits ahead: the browser is second in line
			// until the one ahead leaves.
			arrive(t, room, "holder")
			arrive(t, room, "ahead")

			b := browsertest.New(t, browsertest.OnlyFonts(fonts.packages...))
			b.Viewport(phoneWidth, 740)
			b.Navigate(srv.URL + "/tickets")
			b.WaitUntil(time.Minute, func() error { return placeShown(b, 2) })

			// The site name is text, the logo a picture at the configured URL: neither is markup.
			if got := b.Text("#site"); got != site {
				t.Fatalf("site name shows %q, want %q", got, site)
			}
			if n := browsertest.Eval[int](b, `document.querySelectorAll("header b, main script:not([type])").length`); n != 0 {
				t.Fatalf("the site name became %d elements", n)
			}
			if src := browsertest.Eval[string](b, `document.getElementById("logo").getAttribute("src")`); src != "https://cdn.example/logo.svg?a=1&b=2" {
				t.Fatalf("logo src %q", src)
			}
			if title := browsertest.Eval[string](b, `document.title`); title != "You are in line · "+site {
				t.Fatalf("title %q", title)
			}

			// aria-valuenow follows the place live, without a reload.
			release(t, room, "ahead")
			b.WaitUntil(time.Minute, func() error { return placeShown(b, 1) })

			for _, lang := range waitroom.Languages() {
				want := waitroom.PageText(lang)
				browsertest.Eval[bool](b, `(function(){document.querySelector('#languages a[data-lang="`+lang+`"]').click();return true})()`)
				b.WaitUntil(time.Minute, func() error {
					if got := browsertest.Eval[string](b, `(document.documentElement || {}).lang || ""`); got != lang {
						return fmt.Errorf("page language %q, want %q", got, lang)
					}
					return placeShown(b, 1)
				})
				checks := map[string]string{"#heading": want.Heading, "#eta": want.UnderMinute, "#message": want.Waiting, ".wait span": want.ETA}
				for sel, text := range checks {
					if got := b.Text(sel); got != text {
						t.Errorf("%s: %s shows %q, want %q", lang, sel, got, text)
					}
				}
				if lines := linesOf(b, "#eta"); lines != 1 {
					t.Errorf("%s: the ETA %q takes %d lines at %d px", lang, b.Text("#eta"), lines, phoneWidth)
				}
				for _, sel := range []string{"#position", "#length"} {
					if lines := linesOf(b, sel); lines != 1 {
						t.Errorf("%s: %s takes %d lines", lang, sel, lines)
					}
				}
				if w := browsertest.Eval[int](b, `document.documentElement.scrollWidth`); w > phoneWidth {
					t.Errorf("%s: the page is %d px wide on a %d px screen", lang, w, phoneWidth)
				}
				if current := browsertest.Eval[string](b, `document.querySelector("#languages [aria-current]").dataset.lang`); current != lang {
					t.Errorf("%s: the switch marks %q as current", lang, current)
				}
				if lang == "zh" || lang == "ja" {
					// A CJK glyph is one em wide; a missing one is drawn as a narrower box.
					em := browsertest.Eval[float64](b, `(function(){var s=document.createElement("span");s.style.fontSize="100px";s.textContent="`+string([]rune(want.Heading)[:1])+`";document.getElementById("heading").appendChild(s);var w=s.getBoundingClientRect().width;s.remove();return w/100})()`)
					t.Logf("%s %s: a heading glyph is %.2f em wide", fonts.name, lang, em)
					if fonts.name == "noto-cjk" && (em < 0.95 || em > 1.05) {
						t.Errorf("%s: a heading glyph is %.2f em wide, not drawn by a CJK font", lang, em)
					}
				}
				saveScreenshot(t, b, fonts.name+"-"+lang)
			}
		})
	}
}

// placeShown checks that the page shows place want, and that its progress bar says the same to
// screen readers.
func placeShown(b *browsertest.Browser, want int) error {
	shown := b.Text("#position")
	now := browsertest.Eval[string](b, `(document.getElementById("bar")||{getAttribute:function(){return ""}}).getAttribute("aria-valuenow")`)
	if shown != strconv.Itoa(want) || now != shown {
		return fmt.Errorf("place shows %q, aria-valuenow %q, want %d (page %s)", shown, now, want, b.Location())
	}
	return nil
}

// linesOf counts the line boxes of the text of the first element matching selector.
func linesOf(b *browsertest.Browser, selector string) int {
	return browsertest.Eval[int](b, `(function(){var r=document.createRange();r.selectNodeContents(document.querySelector(`+strconv.Quote(selector)+`));
		var tops={};Array.prototype.forEach.call(r.getClientRects(),function(c){if(c.width>0)tops[Math.round(c.top)]=1});return Object.keys(tops).length})()`)
}

// saveScreenshot takes a screenshot, checks it is a phone-wide picture, and keeps it in the
// directory SLUICE_TEST_SCREENSHOTS names, when set, for a person to look at.
func saveScreenshot(t *testing.T, b *browsertest.Browser, name string) {
	t.Helper()
	shot := b.Screenshot()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if w := img.Bounds().Dx(); w != phoneWidth {
		t.Fatalf("screenshot %s is %d px wide", name, w)
	}
	if dir := os.Getenv("SLUICE_TEST_SCREENSHOTS"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, name+".png"), shot, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
