package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// pageData is what every page template gets.
type pageData struct {
	Title string
	// Nav is the section the page belongs to, for the navigation's current marker.
	Nav string
	// CSRF is the session's token, for the forms.
	CSRF string
	// Login says whether the dashboard has a login (an admin token), to show the log-out button.
	Login bool
	// Note is the outcome of the action that led here.
	Note string
	// Scope is the namespace a session opened with a namespace token is limited to ("" for the
	// admin): the navigation then leaves out the server-wide pages.
	Scope string
	Data  any
}

var funcs = template.FuncMap{
	"ago": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z") + " (" + roundDur(time.Since(t)) + " ago)"
	},
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		d := time.Until(t)
		if d >= 0 {
			return t.UTC().Format("2006-01-02 15:04:05Z") + " (in " + roundDur(d) + ")"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z") + " (" + roundDur(-d) + " ago)"
	},
	"dur":     func(d time.Duration) string { return roundDur(d) },
	"preview": preview,
	"short":   func(b []byte) string { return shortPreview(b) },
	"join":    strings.Join,
	"chart":   func(l live, key string) map[string]any { return map[string]any{"l": l, "k": key} },
	"queues":  func(l live, b nsBlock) map[string]any { return map[string]any{"l": l, "b": b} },
	"spanchart": func(l live, key string, sp span, path string) map[string]any {
		return map[string]any{"l": l, "k": key, "sp": sp, "path": path}
	},
	"timechart": timeChart,
}

func roundDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	default:
		return d.Round(time.Minute).String()
	}
}

// preview shows a payload: indented JSON when it is JSON, the text when it is UTF-8, else a hex
// dump (of at most 4 KiB). The kind says which.
type payloadView struct {
	Kind, Text string
	Size       int
	Cut        bool
}

const previewMax = 4096

func preview(b []byte) payloadView {
	v := payloadView{Size: len(b)}
	if len(b) == 0 {
		v.Kind = "empty"
		return v
	}
	if json.Valid(b) {
		var out bytes.Buffer
		if json.Indent(&out, b, "", "  ") == nil {
			v.Kind, v.Text = "JSON", out.String()
		}
	} else if printable(b) {
		v.Kind, v.Text = "text", string(b)
	}
	if v.Kind == "" {
		c := b
		if len(c) > previewMax {
			c, v.Cut = c[:previewMax], true
		}
		var out strings.Builder
		for i := 0; i < len(c); i += 16 {
			end := min(i+16, len(c))
			fmt.Fprintf(&out, "%08x  % x\n", i, c[i:end])
		}
		v.Kind, v.Text = "hex", out.String()
		return v
	}
	if len(v.Text) > 4*previewMax {
		v.Text, v.Cut = v.Text[:4*previewMax], true
	}
	return v
}

// printable reports whether b reads as text: UTF-8 without control characters other than tabs
// and line breaks (a payload of NULs and escapes is valid UTF-8, and would show as mojibake).
func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, c := range string(b) {
		if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f || c == utf8.RuneError {
			return false
		}
	}
	return true
}

// shortPreview is one line of a payload for lists: its start in hex when it is binary.
func shortPreview(b []byte) string {
	if !printable(b) {
		head := b[:min(len(b), 12)]
		more := ""
		if len(b) > len(head) {
			more = " …"
		}
		return fmt.Sprintf("binary: % x%s", head, more)
	}
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 80 {
		s = s[:77] + "…"
	}
	return s
}

func parsePages() (map[string]*template.Template, error) {
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/_*.html")
	if err != nil {
		return nil, fmt.Errorf("ui: %w", err)
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("ui: %w", err)
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if name == "layout" || strings.HasPrefix(name, "_") {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFS, n)
		if err != nil {
			return nil, fmt.Errorf("ui: %w", err)
		}
		pages[name] = t
	}
	return pages, nil
}

// render writes a page, rendered into a buffer first so that a template error never leaves half
// a page.
func (u *UI) render(w http.ResponseWriter, r *http.Request, status int, page, title string, data any) {
	pd := pageData{Title: title, Nav: page, Login: u.cfg.AdminToken != "", Note: noteText(r.URL.Query()), Data: data}
	if sess, ok := r.Context().Value(sessionKeyCtx{}).(session); ok {
		pd.CSRF, pd.Scope = sess.csrf, sess.ns
	}
	var buf bytes.Buffer
	if err := u.pages[page].ExecuteTemplate(&buf, "layout.html", pd); err != nil {
		u.log.ErrorContext(r.Context(), "dashboard template failed", "page", page, "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
