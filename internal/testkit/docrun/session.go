package docrun

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Session is what runs in one bash process against one server: a file's blocks of one session
// name in order, or a block without a name on its own.
type Session struct {
	// Name is the file and the session's name ("README.md#quickstart"), or the block's place.
	Name string
	// Blocks are the shell blocks to run, in order (skipped ones left out).
	Blocks []Block
	// Files are the files written into the session's directory first, by name.
	Files map[string]string
	// Given are the variables the harness sets (from every block's marker).
	Given []Given
	// Upstreams are the example hosts the harness's HTTP server stands in for.
	Upstreams []string
}

// Plan is every example of the docs sorted out: the sessions to run, the blocks skipped with their
// reasons, and the problems that fail the test before anything runs (a marker that cannot be
// obeyed, a command in a block that is not shell).
type Plan struct {
	Sessions []Session
	Skipped  []Block
	Problems []string
}

// commandLineRE finds a shell command in a block that is not marked as shell: a line that starts
// with curl or a prompt before curl or sluice.
var commandLineRE = regexp.MustCompile(`^\s*(?:curl\s|\$\s+(?:curl|sluice)\s)`)

// NewPlan sorts the blocks into sessions.
func NewPlan(blocks []Block) Plan {
	var p Plan
	byName := map[string]int{} // session name to its index in p.Sessions
	for _, b := range blocks {
		m := b.Marker
		if !b.Shell() {
			if m.File == "" {
				for i, line := range b.Text {
					if commandLineRE.MatchString(line) {
						p.Problems = append(p.Problems, fmt.Sprintf("%s:%d: a command in a ```%s block: mark the block ```sh so it is run (or skipped with a reason)", b.File, b.Line+i, b.Lang))
						break
					}
				}
			}
			if m.Skip != "" || len(m.Given) > 0 {
				p.Problems = append(p.Problems, fmt.Sprintf("%s:%d: skip and given mark shell blocks; this one is ```%s", b.File, m.Line, b.Lang))
			}
			if m.File != "" && m.Session == "" {
				p.Problems = append(p.Problems, fmt.Sprintf("%s:%d: file %s belongs to no session", b.File, m.Line, m.File))
			}
			if m.File == "" {
				continue
			}
		} else if m.File != "" {
			p.Problems = append(p.Problems, fmt.Sprintf("%s:%d: file marks a block that is not shell (a config file's text)", b.File, m.Line))
			continue
		}
		if b.Shell() && m.Skip != "" {
			p.Skipped = append(p.Skipped, b)
			continue
		}
		name := b.Where()
		if m.Session != "" {
			name = b.File + "#" + m.Session
		}
		i, ok := byName[name]
		if !ok {
			i = len(p.Sessions)
			byName[name] = i
			p.Sessions = append(p.Sessions, Session{Name: name, Files: map[string]string{}})
		}
		s := &p.Sessions[i]
		s.Given = append(s.Given, m.Given...)
		s.Upstreams = append(s.Upstreams, m.Upstreams...)
		if b.Shell() {
			s.Blocks = append(s.Blocks, b)
		} else {
			s.Files[m.File] = strings.Join(b.Text, "\n") + "\n"
		}
	}
	// A session of files alone runs nothing.
	kept := p.Sessions[:0]
	for _, s := range p.Sessions {
		if len(s.Blocks) > 0 {
			kept = append(kept, s)
		}
	}
	p.Sessions = kept
	return p
}

// Ports are the session server's listeners, and the harness's upstream: the docs' localhost:7777
// and :7778 are rewritten to them, so sessions run side by side, and the URLs of the session's
// upstream hosts to the upstream.
type Ports struct{ Public, Admin, Upstream int }

var (
	docAddrRE = regexp.MustCompile(`\b(?:localhost|127\.0\.0\.1):(7777|7778)\b`)
	// serverLineRE is a command that starts the server: `sluice server`, or `go run ./cmd/sluice
	// server` from a checkout, in the foreground or with &.
	serverLineRE = regexp.MustCompile(`^\s*(?:go run \./cmd/sluice|sluice) server(\s[^&]*)?\s*&?\s*$`)
)

// rewrite points the docs' default addresses at the session's ports, and the URLs of its
// upstream hosts at the harness's upstream.
func (s Session) rewrite(text string, ports Ports) string {
	text = docAddrRE.ReplaceAllStringFunc(text, func(addr string) string {
		if strings.HasSuffix(addr, ":7777") {
			return "127.0.0.1:" + strconv.Itoa(ports.Public)
		}
		return "127.0.0.1:" + strconv.Itoa(ports.Admin)
	})
	for _, host := range s.Upstreams {
		re := regexp.MustCompile(`https?://` + regexp.QuoteMeta(host) + `\b`)
		text = re.ReplaceAllString(text, "http://127.0.0.1:"+strconv.Itoa(ports.Upstream))
	}
	return text
}

// origin is where a line of a session's script came from.
type origin struct {
	block *Block
	cmd   command
}

// where names the command in messages: "docs/server.md:25".
func (o origin) where() string { return fmt.Sprintf("%s:%d", o.block.File, o.block.Line+o.cmd.first) }

// script is a session as bash runs it, with the origin of each of its lines.
type script struct {
	text    string
	origins map[int]origin // by 1-based line of text
}

// startsServer reports whether the session starts its own server (with a `sluice server` line).
func (s Session) startsServer() bool {
	for _, b := range s.Blocks {
		for _, c := range commands(b.shellText()) {
			if serverLineRE.MatchString(c.code) {
				return true
			}
		}
	}
	return false
}

// script writes the session as a bash script: the prelude, the harness's server unless the docs
// start one, then every block's lines with the docs' addresses pointed at ports, a server line
// turned into the harness's docrun_server (same arguments) and a line that assigns a given
// variable turned into a no-op.
func (s Session) script(ports Ports) (script, error) {
	var out []string
	sc := script{origins: map[int]origin{}}
	out = append(out, `source "$DOCRUN_PRELUDE"`)
	if !s.startsServer() {
		out = append(out, `docrun_server --redis-url "$DOCRUN_REDIS_URL" --prefix "$DOCRUN_PREFIX"`)
	}
	for bi := range s.Blocks {
		b := &s.Blocks[bi]
		out = append(out, "docrun_block "+strconv.Quote(b.Where()))
		text := b.shellText()
		lines := make([]string, len(text))
		for i, l := range text {
			lines[i] = s.rewrite(l, ports)
		}
		for _, c := range commands(text) {
			if m := serverLineRE.FindStringSubmatch(c.code); m != nil {
				if c.first != c.last {
					return sc, fmt.Errorf("%s:%d: a server line on one line only", b.File, b.Line+c.first)
				}
				lines[c.first] = "docrun_server" + strings.TrimRight(m[1], " \t")
			}
			for _, g := range s.Given {
				if assigns(c.code, g.Var) {
					for i := c.first; i <= c.last; i++ {
						lines[i] = ": given by the harness: " + g.Var
					}
				}
			}
			for i := c.first; i <= c.last; i++ {
				sc.origins[len(out)+i+1] = origin{block: b, cmd: c}
			}
		}
		out = append(out, lines...)
	}
	sc.text = strings.Join(out, "\n") + "\n"
	return sc, nil
}

// shellText is the block as bash runs it. A console block is a transcript: its lines after a
// "$ " prompt are the commands, the others their output (comments, so they can name statuses).
func (b Block) shellText() []string {
	if b.Lang != "console" {
		return b.Text
	}
	text := make([]string, len(b.Text))
	for i, l := range b.Text {
		if cmd, ok := strings.CutPrefix(l, "$ "); ok {
			text[i] = cmd
		} else if strings.TrimSpace(l) != "" {
			text[i] = "# " + l
		}
	}
	return text
}

// assigns reports whether the command sets variable name: "NAME=..." or "export NAME=...".
func assigns(code, name string) bool {
	code = strings.TrimPrefix(strings.TrimSpace(code), "export ")
	return strings.HasPrefix(strings.TrimSpace(code), name+"=")
}
