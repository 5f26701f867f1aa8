package waitroom

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// validatePage checks the settings of the waiting page: language, site name and logo.
func (c RoomConfig) validatePage() error {
	switch {
	case c.Language != "" && !supported(c.Language):
		return invalid("language", "must be one of %s or empty (by Accept-Language), got %q",
			strings.Join(languages[:], ", "), c.Language)
	case !utf8.ValidString(c.SiteName) || utf8.RuneCountInString(c.SiteName) > 100:
		return invalid("site_name", "must be valid UTF-8 of at most 100 characters")
	case strings.ContainsFunc(c.SiteName, unicode.IsControl):
		return invalid("site_name", "must not contain control characters")
	case !validLogoURL(c.LogoURL):
		return invalid("logo_url", `must be an https URL or a path on the site ("/logo.png"), at most 2048 bytes, got %q`, c.LogoURL)
	}
	return nil
}

// validLogoURL accepts "", an absolute https URL with a host, or a path that starts with one
// slash: a logo served over plain HTTP would make an https page mixed content, and a
// javascript:, data: or protocol-relative ("//host") URL is not a picture of the site.
func validLogoURL(s string) bool {
	if s == "" {
		return true
	}
	if len(s) > 2048 || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '\\' }) {
		return false
	}
	u, err := url.Parse(s)
	if err != nil {
		return false
	}
	if u.Scheme == "" {
		return u.Host == "" && strings.HasPrefix(s, "/") && !strings.HasPrefix(s, "//")
	}
	return u.Scheme == "https" && u.Host != "" && u.User == nil
}
