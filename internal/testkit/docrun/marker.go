package docrun

import (
	"fmt"
	"regexp"
	"strings"
)

// Marker is what a "docrun:" comment before a block says, directives separated by ";":
//
//	session NAME       the block runs in one bash process with the file's other blocks of session
//	                   NAME, in order, so variables carry from one to the next
//	skip REASON        the block is not run, for the reason given (required)
//	given VAR=SOURCE   the harness sets VAR before the block runs, and the block's own line that
//	                   assigns VAR (a placeholder such as sk_...) is not run; SOURCE is one of
//	                   "printed" (the token the session's server printed on its first start),
//	                   "admin" (the session's server is started with an admin token, which VAR
//	                   holds) and "token:NS" (a new token with every permission of namespace NS)
//	file NAME          (on a block that is not shell) the block's text is written to file NAME in
//	                   the session's directory before the session runs
//	upstream HOST      the docs' URLs of HOST (an example host that does not exist, or a reader's
//	                   own app such as 127.0.0.1:8080) go to a real HTTP server of the harness
//	                   instead, which answers every request 200 with a small JSON body; the
//	                   session's server may then call loopback addresses
type Marker struct {
	Session   string
	Skip      string
	Given     []Given
	File      string
	Upstreams []string
	// Line is the marker's line in its file, 0 when there is no marker.
	Line int
}

// Given is one variable the harness sets for a session.
type Given struct {
	Var    string
	Source string // "printed", "admin" or "token:<namespace>"
}

var (
	varNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	wordRE    = regexp.MustCompile(`^[-_.A-Za-z0-9]+$`)
	hostRE    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+(:[0-9]+)?$`)
)

// ParseMarker parses the text of a marker after "docrun:".
func ParseMarker(text string) (Marker, error) {
	var m Marker
	for _, part := range strings.Split(text, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		word, arg, _ := strings.Cut(part, " ")
		arg = strings.TrimSpace(arg)
		switch word {
		case "session":
			if !wordRE.MatchString(arg) {
				return m, fmt.Errorf("docrun: session needs a name of letters, digits, '-', '_' or '.': %q", part)
			}
			m.Session = arg
		case "skip":
			if len(strings.Fields(arg)) < 2 {
				return m, fmt.Errorf("docrun: skip needs its reason, in a few words: %q", part)
			}
			m.Skip = arg
		case "given":
			g, err := parseGiven(arg)
			if err != nil {
				return m, err
			}
			m.Given = append(m.Given, g)
		case "upstream":
			if !hostRE.MatchString(arg) {
				return m, fmt.Errorf("docrun: upstream needs a host name, with a port or not: %q", part)
			}
			m.Upstreams = append(m.Upstreams, arg)
		case "file":
			if !wordRE.MatchString(arg) {
				return m, fmt.Errorf("docrun: file needs a plain file name: %q", part)
			}
			m.File = arg
		default:
			return m, fmt.Errorf("docrun: unknown directive %q (session, skip, given, file, upstream)", word)
		}
	}
	return m, nil
}

func parseGiven(arg string) (Given, error) {
	name, src, ok := strings.Cut(arg, "=")
	if !ok || !varNameRE.MatchString(name) {
		return Given{}, fmt.Errorf("docrun: given needs VAR=SOURCE: %q", arg)
	}
	ns, isToken := strings.CutPrefix(src, "token:")
	switch {
	case src == "printed", src == "admin":
	case isToken && wordRE.MatchString(ns):
	default:
		return Given{}, fmt.Errorf("docrun: given %s: SOURCE is printed, admin or token:<namespace>, not %q", name, src)
	}
	return Given{Var: name, Source: src}, nil
}
