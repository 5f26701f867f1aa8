package cli

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// errFlagParse is returned when the flag package rejected the flags (it printed why).
var errFlagParse = errors.New("bad flags")

// newFlags returns a flag set for a command whose usage line is "sluice <name> <synopsis>",
// followed by the description and the flags.
func newFlags(env *Env, name, synopsis, description string) *flag.FlagSet {
	fs := flag.NewFlagSet("sluice "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: sluice %s %s\n\n%s\n", name, synopsis, strings.TrimSpace(description))
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintln(w, "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseFlags parses args with flags and positional arguments in any order ("publish q --tries 3
// payload"); everything after "--" is positional. It returns the positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var tail []string
	for i, a := range args {
		if a == "--" {
			args, tail = args[:i], args[i+1:]
			break
		}
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errHelp
			}
			return nil, errFlagParse
		}
		args = fs.Args()
		if len(args) == 0 {
			return append(pos, tail...), nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}

// wantArgs checks the number of positional arguments.
func wantArgs(pos []string, lo, hi int, what string) error {
	if len(pos) < lo || (hi >= 0 && len(pos) > hi) {
		return usagef("want %s, got %d argument(s)", what, len(pos))
	}
	return nil
}

// seconds is a duration flag that also takes a bare number of seconds ("1.5" = "1.5s"). The
// native API takes durations as seconds.
type seconds struct {
	d   time.Duration
	set bool
}

func (s *seconds) String() string {
	if s == nil || !s.set {
		return ""
	}
	return s.d.String()
}

func (s *seconds) Set(v string) error {
	d, err := parseSeconds(v)
	if err != nil {
		return err
	}
	s.d, s.set = d, true
	return nil
}

func parseSeconds(v string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if f < 0 {
			return 0, errors.New("must not be negative")
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, errors.New("want a duration such as 30s, 1m30s or a number of seconds")
	}
	if d < 0 {
		return 0, errors.New("must not be negative")
	}
	return d, nil
}

// secs is the JSON number of seconds the API takes for d.
func secs(d time.Duration) float64 { return d.Seconds() }

// strList is a flag that may be repeated or take a comma-separated list.
type strList []string

func (l *strList) String() string { return strings.Join(*l, ",") }

func (l *strList) Set(v string) error {
	for p := range strings.SplitSeq(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

// keyValues is a repeatable key=value flag.
type keyValues map[string]string

func (m keyValues) String() string {
	parts := make([]string, 0, len(m))
	for k, v := range m {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, ",")
}

func (m keyValues) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return errors.New("want key=value")
	}
	m[k] = val
	return nil
}

// connFlags holds the flags every client command shares: where the server is and how to present
// the answer.
type connFlags struct {
	url, token, ns string
	json           bool
	timeout        time.Duration
	env            *Env
}

// addConnFlags registers --url, --token, --ns, --json and --http-timeout.
func addConnFlags(fs *flag.FlagSet, env *Env) *connFlags {
	c := &connFlags{env: env}
	fs.StringVar(&c.url, "url", cmp.Or(env.Getenv("SLUICE_URL"), defaultURL), "server's public API `URL` (env SLUICE_URL)")
	fs.StringVar(&c.token, "token", env.Getenv("SLUICE_TOKEN"), "namespace `token` (env SLUICE_TOKEN)")
	fs.StringVar(&c.ns, "ns", cmp.Or(env.Getenv("SLUICE_NAMESPACE"), defaultNamespace), "`namespace` (env SLUICE_NAMESPACE)")
	fs.BoolVar(&c.json, "json", false, "print the server's JSON answer")
	fs.DurationVar(&c.timeout, "http-timeout", 30*time.Second, "give up on a request after this `duration`")
	return c
}

// Defaults of the connection flags.
const (
	defaultURL       = "http://127.0.0.1:7777"
	defaultAdminURL  = "http://127.0.0.1:7778"
	defaultNamespace = "default"
)

func (c *connFlags) client() *apiClient {
	return newAPIClient(c.url, c.token, c.timeout, false)
}

func (c *connFlags) out() io.Writer { return c.env.Stdout }
