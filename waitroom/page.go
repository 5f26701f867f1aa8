package waitroom

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
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
	// Lang is "en" or "zh"; Text holds the page's words in it.
	Lang string
	Text Text
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

// Text is the waiting page's words in one language.
type Text struct {
	Title, Heading, Position, Length, ETA, OpensIn, Note                        string
	Waiting, NotOpen, Unavailable, Limited, Left, Unknown, UnderMinute, Minutes string
}

var texts = map[string]Text{
	"en": {
		Title: "You are in line", Heading: "You are in line",
		Position: "your place", Length: "in line", ETA: "estimated wait", OpensIn: "Opens in",
		Note:        "Keep this page open: it refreshes by itself and takes you in when it is your turn. Refreshing keeps your place.",
		Waiting:     "The site is busy. You will be let in as soon as a place is free.",
		NotOpen:     "The site has not opened yet. Everyone who arrives before the start is put in a random order when it opens.",
		Unavailable: "The waiting room cannot be reached right now. This page will try again shortly.",
		Limited:     "Too many refreshes. This page will try again shortly.",
		Left:        "You have left the line. Reload this page in a moment to join it again.",
		Unknown:     "unknown", UnderMinute: "under a minute", Minutes: "about %d min",
	},
	"zh": {
		Title: "正在排队", Heading: "您正在排队",
		Position: "您的位置", Length: "排队人数", ETA: "预计等待", OpensIn: "距离开放还有",
		Note:        "请保持本页面打开：页面会自动刷新，轮到您时会自动进入。刷新页面不会丢失您的位置。",
		Waiting:     "当前访问人数较多，一有空位就会让您进入。",
		NotOpen:     "尚未开放。开放前到达的访客将在开放时随机排序。",
		Unavailable: "排队服务暂时无法连接，本页面稍后会自动重试。",
		Limited:     "刷新过于频繁，本页面稍后会自动重试。",
		Left:        "您已离开队列。稍后刷新本页面即可重新排队。",
		Unknown:     "未知", UnderMinute: "不到 1 分钟", Minutes: "约 %d 分钟",
	},
}

// language picks the page's language: the room's setting, else the first of the request's
// Accept-Language (by q) that is English or Chinese, else English.
func language(room string, r *http.Request) string {
	if room != "" {
		return room
	}
	type tag struct {
		lang string
		q    float64
		i    int
	}
	var tags []tag
	for i, part := range strings.Split(r.Header.Get("Accept-Language"), ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				q = f
			}
		}
		name = strings.ToLower(name)
		switch {
		case name == "zh" || strings.HasPrefix(name, "zh-"):
			tags = append(tags, tag{"zh", q, i})
		case name == "en" || strings.HasPrefix(name, "en-"):
			tags = append(tags, tag{"en", q, i})
		}
	}
	slices.SortStableFunc(tags, func(a, b tag) int {
		switch {
		case a.q > b.q:
			return -1
		case a.q < b.q:
			return 1
		}
		return a.i - b.i
	})
	for _, t := range tags {
		if t.q > 0 {
			return t.lang
		}
	}
	return "en"
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

// pageData builds the page's data for a status.
func (c *Client) pageData(st Status, state, lang, statusURL, next string) PageData {
	t := texts[lang]
	d := PageData{
		Room: st.Room, Lang: lang, Text: t, State: state,
		Position: st.Position, Length: st.Length,
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
		},
	}
	return d
}

// renderPage writes the waiting page with the given HTTP status: the room's own template when it
// has one, else the built-in page.
func (c *Client) renderPage(w http.ResponseWriter, r *http.Request, room *Room, code int, st Status, state, statusURL, next string) {
	var cfg RoomConfig
	var own *template.Template
	if cur := room.state.Load(); cur != nil {
		cfg, own = cur.cfg, cur.page
	}
	d := c.pageData(st, state, language(cfg.Language, r), statusURL, next)
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
