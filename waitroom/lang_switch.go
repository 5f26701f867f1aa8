package waitroom

import (
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The waiting page's language switch is a list of plain links, so it works without JavaScript:
// each is the page's own URL with ?sluice_lang=<code>. Following one makes the pick the visitor's
// langCookie and leads back to the page's URL without the parameter (303), where the visitor's
// place, kept by its visitor cookie, shows in the language picked. The answer costs no Redis call
// and counts as no poll.

// langParam is the query parameter of the switch's links.
const langParam = "sluice_lang"

// langCookieTTL is how long a browser keeps the visitor's pick.
const langCookieTTL = 365 * 24 * time.Hour

// switchLanguage answers a request that follows a link of the language switch: asked (the URL
// asked for, a path on this site) carries langParam. A built-in language becomes the visitor's
// pick (another is ignored), and a 303 leads back to asked without the parameter. It reports
// whether the request was one.
func (c *Client) switchLanguage(w http.ResponseWriter, r *http.Request, asked string) bool {
	if !strings.Contains(asked, langParam+"=") {
		return false
	}
	rest, lang, found := cutLangParam(asked)
	if !found {
		return false
	}
	if supported(lang) {
		http.SetCookie(w, &http.Cookie{ //nolint:gosec // G124: Secure follows the request (TLS or Config.SecureCookies); HttpOnly and SameSite are set
			Name: langCookie, Value: lang, Path: "/", MaxAge: int(langCookieTTL / time.Second),
			HttpOnly: true, Secure: c.secure(r), SameSite: http.SameSiteLaxMode,
		})
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, rest, http.StatusSeeOther) //nolint:gosec // G710: asked went through safeNext (a path on this site only), and rest is asked less a parameter
	return true
}

// cutLangParam returns page without its langParam parameters, keeping the others as they were
// (order and encoding), and the value of the last one.
func cutLangParam(page string) (rest, lang string, found bool) {
	path, query, ok := strings.Cut(page, "?")
	if !ok {
		return page, "", false
	}
	var kept []string
	for part := range strings.SplitSeq(query, "&") {
		if k, v, _ := strings.Cut(part, "="); k == langParam {
			lang, _ = url.QueryUnescape(v)
			found = true
			continue
		}
		kept = append(kept, part)
	}
	if len(kept) == 0 {
		return path, lang, found
	}
	return path + "?" + strings.Join(kept, "&"), lang, found
}

// langHref is the switch's link to lang from the page shown at page.
func langHref(page, lang string) string {
	rest, _, _ := cutLangParam(page)
	sep := "?"
	if strings.Contains(rest, "?") {
		sep = "&"
	}
	return rest + sep + langParam + "=" + url.QueryEscape(lang)
}
