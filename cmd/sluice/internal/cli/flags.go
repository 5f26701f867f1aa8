package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
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

// parseArgs parses args with flags and positional arguments in any order ("publish q --tries 3
// payload"); everything after "--" is positional. It returns the positional arguments, of which
// there must be lo to hi (hi < 0: no upper bound); what names them in the usage error.
func parseArgs(fs *flag.FlagSet, args []string, lo, hi int, what string) ([]string, error) {
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
			break
		}
		pos, args = append(pos, args[0]), args[1:]
	}
	pos = append(pos, tail...)
	if len(pos) < lo || (hi >= 0 && len(pos) > hi) {
		return nil, usagef("want %s, got %d argument(s)", what, len(pos))
	}
	return pos, nil
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

// serverAPI is one of the server's two APIs as the commands reach it: the flags and environment
// variables that point at it, and what to tell a user who cannot reach it.
type serverAPI struct {
	// name is what errors call it ("the Sluice server is not reachable at ...").
	name                            string
	urlFlag, urlEnv, urlUsage       string
	defaultURL                      string
	tokenFlag, tokenEnv, tokenUsage string
	// start is the advice when nothing listens at the URL.
	start string
}

// The server's two APIs.
var (
	publicAPI = serverAPI{ //nolint:gosec // names of the token flag and variable
		name:    "Sluice server",
		urlFlag: "url", urlEnv: "SLUICE_URL", urlUsage: "server's public API `URL`", defaultURL: defaultURL,
		tokenFlag: "token", tokenEnv: "SLUICE_TOKEN", tokenUsage: "namespace `token`",
		start: "start one with `sluice server`",
	}
	adminAPI = serverAPI{ //nolint:gosec // names of the token flag and variable
		name:    "Sluice admin API",
		urlFlag: "admin-url", urlEnv: "SLUICE_ADMIN_URL", urlUsage: "server's admin API `URL`", defaultURL: defaultAdminURL,
		tokenFlag: "admin-token", tokenEnv: "SLUICE_ADMIN_TOKEN", tokenUsage: "admin `token`, when the server has one",
		start: "start a server with `sluice server`; its admin listener binds 127.0.0.1:7778, so run admin commands on the server's machine",
	}
)

// apiFlags are the flags a command that calls one of the server's APIs shares: where the API is,
// the token, and how to present the answer.
type apiFlags struct {
	api        *serverAPI
	url, token string
	json       bool
	timeout    time.Duration
	stdout     io.Writer
}

// register adds the URL and token flags of api, --json and --http-timeout to fs.
func (a *apiFlags) register(fs *flag.FlagSet, env *Env, api *serverAPI) {
	a.api, a.stdout = api, env.Stdout
	fs.StringVar(&a.url, api.urlFlag, cmp.Or(env.Getenv(api.urlEnv), api.defaultURL), api.urlUsage+" (env "+api.urlEnv+")")
	fs.StringVar(&a.token, api.tokenFlag, env.Getenv(api.tokenEnv), api.tokenUsage+" (env "+api.tokenEnv+")")
	fs.BoolVar(&a.json, "json", false, "print the server's JSON answer")
	fs.DurationVar(&a.timeout, "http-timeout", 30*time.Second, "give up on a request after this `duration`")
}

func (a *apiFlags) client() *apiClient { return newAPIClient(a.url, a.token, a.timeout, a.api) }

func (a *apiFlags) out() io.Writer { return a.stdout }

// show sends a request and decodes its answer into out (when not nil). Under --json it prints the
// answer as the server sent it, and the command prints nothing more:
//
//	if err := cf.show(ctx, method, path, nil, body, &ans); err != nil || cf.json {
//		return err
//	}
func (a *apiFlags) show(ctx context.Context, method, path string, query url.Values, body, out any) error {
	data, err := a.client().callJSON(ctx, method, path, query, body, out)
	if err != nil {
		return err
	}
	if a.json {
		return printJSON(a.stdout, data)
	}
	return nil
}

// connFlags are the flags of the commands that call the public API as a namespace's client.
type connFlags struct {
	apiFlags
	ns string
}

// addConnFlags registers --url, --token, --ns, --json and --http-timeout.
func addConnFlags(fs *flag.FlagSet, env *Env) *connFlags {
	c := &connFlags{}
	c.register(fs, env, &publicAPI)
	fs.StringVar(&c.ns, "ns", cmp.Or(env.Getenv("SLUICE_NAMESPACE"), defaultNamespace), "`namespace` (env SLUICE_NAMESPACE)")
	return c
}

// addAdminFlags registers the flags of the admin commands: --admin-url, --admin-token, --json and
// --http-timeout.
func addAdminFlags(fs *flag.FlagSet, env *Env) *apiFlags {
	a := &apiFlags{}
	a.register(fs, env, &adminAPI)
	return a
}

// Defaults of the connection flags.
const (
	defaultURL       = "http://127.0.0.1:7777"
	defaultAdminURL  = "http://127.0.0.1:7778"
	defaultNamespace = "default"
)
