package waitroom

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"net/http"
	"time"
)

//go:embed templates/page.html
var pageHTML string

// builtinPage is the built-in waiting page; parsed once per Client (templates are values, not
// package state).
func builtinPage() *template.Template { return template.Must(template.New("page").Parse(pageHTML)) }

// PageData is what the waiting page template receives (the built-in one and a room's own
// RoomConfig.Template alike).
type PageData struct {
	Room string
	// SiteName and LogoURL are the room's site_name and logo_url settings ("" when unset).
	SiteName, LogoURL string
	// Lang is one of Languages; Text holds the page's words in it.
	Lang string
	Text Text
	// Switch lists every built-in language for the page's language switch, with its link.
	Switch []LanguageChoice
	// State is "waiting", "not_open", "unavailable", "limited" (too many refreshes, or too many
	// new visitors from one address), "left" (released a moment ago), "entering" (the browser's
	// first request: its next one joins the line) or "challenge" (a proof of work to solve first).
	State string
	// Message is the sentence that says what is going on, in Lang.
	Message string
	// Position (1-based), Length of the line, ETA in words and Progress in percent (0..100).
	Position, Length int
	ETA              string
	Progress         int
	// Place says the position and length in words (the progress bar's aria-valuetext).
	Place string
	// OpensIn is the countdown to the opening ("1:02:03"), when State is "not_open".
	OpensIn string
	// RefreshSeconds is the meta refresh for browsers without JavaScript.
	RefreshSeconds int
	// Script is the page script's data (JSON inside <script type="application/json">): status
	// URL, next URL, poll interval, state and words.
	Script PageScript
}

// PageScript is the data the page's script reads.
type PageScript struct {
	Status    string            `json:"status"`
	Next      string            `json:"next"`
	PollMs    int64             `json:"poll_ms"`
	State     string            `json:"state"`
	OpensInMs int64             `json:"opens_in_ms"`
	Text      map[string]string `json:"text"`
	// Challenge is the proof of work to solve, when State is "challenge".
	Challenge *ChallengeJSON `json:"challenge,omitempty"`
}

// LanguageChoice is one entry of the page's language switch.
type LanguageChoice struct {
	// Lang is the language's code, Name its own name; Current marks the page's language.
	Lang, Name string
	Current    bool
	// Href is the switch's link: the page's URL with ?sluice_lang=Lang (it works without
	// JavaScript; see lang_switch.go).
	Href string
}

// languageChoices is the switch of the page shown at page, in current.
func languageChoices(current, page string) []LanguageChoice {
	out := make([]LanguageChoice, len(languages))
	for i, l := range languages {
		out[i] = LanguageChoice{Lang: l, Name: texts[l].Name, Current: l == current, Href: langHref(page, l)}
	}
	return out
}

// etaText says an ETA in words.
func etaText(t Text, d time.Duration, known bool) string {
	switch {
	case !known:
		return t.Unknown
	case d < time.Minute:
		return t.UnderMinute
	}
	return fmt.Sprintf(t.Minutes, int((d+time.Minute-1)/time.Minute))
}

// refreshSeconds is how soon the page reloads itself without JavaScript: at once for a browser
// that just got its visitor cookie, once a challenge's wait is over, else every poll interval.
func refreshSeconds(st Status, poll time.Duration) int {
	switch st.State {
	case Entering:
		return 1
	case Challenged, Limited:
		poll = max(poll, st.RetryAfter)
	}
	return int(max(poll, time.Second).Round(time.Second) / time.Second)
}

// clock formats a countdown as m:ss or h:mm:ss.
func clock(d time.Duration) string {
	s := int(max(d, 0).Round(time.Second) / time.Second)
	h, m, sec := s/3600, s%3600/60, s%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, sec)
	}
	return fmt.Sprintf("%d:%02d", m, sec)
}

// pageData builds the page's data for a status, for the page shown at page.
func (c *Client) pageData(cfg RoomConfig, st Status, state, lang, page, statusURL, next string) PageData {
	t := texts[lang]
	d := PageData{
		Room: st.Room, SiteName: cfg.SiteName, LogoURL: cfg.LogoURL,
		Lang: lang, Text: t, Switch: languageChoices(lang, page), State: state,
		Position: st.Position, Length: st.Length, Place: fmt.Sprintf(t.Place, st.Position, st.Length),
		ETA:            etaText(t, st.ETA, st.ETAKnown),
		Progress:       int(st.Progress() * 100),
		OpensIn:        clock(st.OpensIn),
		RefreshSeconds: refreshSeconds(st, c.cfg.PollInterval),
	}
	switch state {
	case "not_open":
		d.Message = t.NotOpen
	case "unavailable":
		d.Message = t.Unavailable
	case "limited":
		d.Message = t.Limited
	case "left":
		d.Message = t.Left
	default:
		d.Message = t.Waiting
	}
	d.Script = PageScript{
		Status: statusURL, Next: next, PollMs: c.cfg.PollInterval.Milliseconds(), State: state,
		OpensInMs: st.OpensIn.Milliseconds(), Challenge: c.statusJSON(st).Challenge,
		Text: map[string]string{
			"unknown": t.Unknown, "under_minute": t.UnderMinute, "minutes": t.Minutes,
			"waiting": t.Waiting, "not_open": t.NotOpen, "unavailable": t.Unavailable, "left": t.Left,
			"place": t.Place,
		},
	}
	return d
}

// renderPage writes the waiting page shown at page (a path on this site) with the given HTTP
// status: the room's own template when it has one, else the built-in page.
func (c *Client) renderPage(w http.ResponseWriter, r *http.Request, room *Room, code int, st Status, state, page, statusURL, next string) {
	var cfg RoomConfig
	var own *template.Template
	if cur := room.state.Load(); cur != nil {
		cfg, own = cur.cfg, cur.page
	}
	d := c.pageData(cfg, st, state, language(cfg.Language, r), page, statusURL, next)
	tmpl := c.page
	if own != nil {
		tmpl = own
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, d); err != nil {
		c.cfg.Logger.WarnContext(r.Context(), "waitroom: the room's page template failed; using the built-in page",
			"room", room.name, "error", err)
		buf.Reset()
		if err := c.page.Execute(&buf, d); err != nil {
			http.Error(w, "waiting room page failed", http.StatusInternalServerError)
			return
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Language", d.Lang)
	h.Set("Vary", "Accept-Language, Cookie")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}
