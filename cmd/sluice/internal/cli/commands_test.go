package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/benchkit/loadgen"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
)

func TestErrors(t *testing.T) {
	t.Parallel()
	f := setup(t)
	t.Run("unknown token", func(t *testing.T) {
		t.Parallel()
		r := runWith(t, f.env("SLUICE_TOKEN", "sk_wrong"), "", "publish", "q", "{}")
		wantFail(t, r, exitError, "sluice publish: unauthenticated: ", "(HTTP 401)")
	})
	t.Run("flag overrides env", func(t *testing.T) {
		t.Parallel()
		r := runWith(t, f.env("SLUICE_TOKEN", "sk_wrong"), "", "publish", "--token", f.Token, "q", "{}")
		if r.Code != 0 {
			t.Fatalf("--token did not override SLUICE_TOKEN: %+v", r)
		}
	})
	t.Run("invalid argument", func(t *testing.T) {
		t.Parallel()
		wantFail(t, f.run(t, "publish", "--priority", "900", "q", "{}"), exitError, "invalid_argument", "priority", "(HTTP 400)")
	})
	t.Run("lease lost", func(t *testing.T) {
		t.Parallel()
		id := publishedID(t, f.must(t, "publish", "ll", "{}"))
		f.must(t, "consume", "ll")
		wantFail(t, f.run(t, "ack", "ll", id, "7"), exitError, "(HTTP 409)")
	})
	t.Run("server not reachable", func(t *testing.T) {
		t.Parallel()
		r := runWith(t, map[string]string{"SLUICE_URL": "http://127.0.0.1:1"}, "", "stats")
		wantFail(t, r, exitError, "not reachable at http://127.0.0.1:1", "connection refused", "sluice server", "SLUICE_URL")
		r = runWith(t, map[string]string{"SLUICE_ADMIN_URL": "http://127.0.0.1:1"}, "", "token", "create")
		wantFail(t, r, exitError, "admin API is not reachable at http://127.0.0.1:1", "SLUICE_ADMIN_URL")
	})
	t.Run("usage", func(t *testing.T) {
		t.Parallel()
		wantFail(t, f.run(t, "publish"), exitUsage, "want <queue> [payload]", "sluice publish -h")
		wantFail(t, f.run(t, "ack", "q", "id", "first"), exitUsage, "delivery \"first\"")
		wantFail(t, f.run(t, "consume", "--bogus", "q"), exitUsage, "flag provided but not defined: -bogus", "Usage: sluice consume")
		wantFail(t, f.run(t, "publish", "--delay", "soon", "q"), exitUsage, "invalid value \"soon\"")
		wantFail(t, f.run(t, "frobnicate"), exitUsage, `unknown command "frobnicate"`)
		wantFail(t, f.run(t, "dead"), exitUsage, "sluice dead: want a subcommand: list, respawn")
		wantFail(t, f.run(t, "token", "mint"), exitUsage, "sluice token: want a subcommand: create, gen, revoke")
		wantFail(t, f.run(t, "stats", "--url", "ftp://x"), exitUsage, "bad server URL")
		wantFail(t, f.run(t, "bench", "--cpu", "server"), exitUsage, `--cpu: "server": want name=pid`)
		wantFail(t, f.run(t, "bench", "--cpu", "redis=-3"), exitUsage, `--cpu: "redis=-3": want name=pid`)
	})
	t.Run("help", func(t *testing.T) {
		t.Parallel()
		r := f.run(t, "help")
		if r.Code != 0 {
			t.Fatalf("help: %+v", r)
		}
		wantOut(t, r.Stdout, "publish", "consume", "dead list", "dead respawn", "token create", "token revoke", "bench", "version", "SLUICE_URL")
		r = f.run(t, "help", "dead", "respawn")
		if r.Code != 0 || !strings.Contains(r.Stderr, "Usage: sluice dead respawn") {
			t.Fatalf("help dead respawn: %+v", r)
		}
	})
}

func TestTokens(t *testing.T) {
	t.Parallel()
	f := setup(t)
	out := f.must(t, "token", "create", "--ns", f.NS, "--perm", "publish", "--description", "producer")
	wantOut(t, out, "created token ", "in namespace shop", "publish", "export SLUICE_TOKEN=sk_")
	secret := out[strings.Index(out, "SLUICE_TOKEN=")+len("SLUICE_TOKEN="):]
	secret = strings.TrimSpace(secret)
	id := strings.Fields(out)[2]

	producer := f.env("SLUICE_TOKEN", secret)
	if r := runWith(t, producer, "", "publish", "q", "{}"); r.Code != 0 {
		t.Fatalf("publish with a publish token: %+v", r)
	}
	wantFail(t, runWith(t, producer, "", "consume", "q"), exitError, "permission_denied", "(HTTP 403)")

	wantOut(t, f.must(t, "token", "revoke", "--ns", f.NS, id), "revoked token "+id+" of namespace shop")
	testwait.Until(t, time.Minute, "the revoked token to be refused", func() bool {
		r := runWith(t, producer, "", "publish", "q", "{}")
		return r.Code == exitError && strings.Contains(r.Stderr, "unauthenticated")
	})
	wantFail(t, f.run(t, "token", "revoke", "--ns", f.NS, id), exitError, "not_found")

	// The admin API wants its token.
	r := runWith(t, f.env("SLUICE_ADMIN_TOKEN", "nope"), "", "token", "create", "--ns", "x")
	wantFail(t, r, exitError, "unauthenticated")
}

// `sluice token gen` prints a strong secret, and the server refuses to start with a weak admin
// token (from a flag or the environment), saying which setting and how to make a strong one.
func TestTokenGenAndWeakAdminToken(t *testing.T) {
	t.Parallel()
	a, b := runWith(t, nil, "", "token", "gen"), runWith(t, nil, "", "token", "gen")
	strong := regexp.MustCompile(`^[A-Za-z0-9_-]{43}\n$`)
	if a.Code != 0 || !strong.MatchString(a.Stdout) || a.Stdout == b.Stdout {
		t.Fatalf("token gen: %+v, then %+v", a, b)
	}
	wantFail(t, runWith(t, nil, "", "token", "gen", "extra"), exitUsage, "no arguments")
	refusal := []string{"admin_token", "--admin-token", "SLUICE_ADMIN_TOKEN", "too weak", "sluice token gen"}
	wantFail(t, runWith(t, nil, "", "server", "--admin-token", "admin-secret", "--redis-url", "redis://127.0.0.1:1"),
		exitError, append(refusal, "12 characters")...)
	wantFail(t, runWith(t, map[string]string{"SLUICE_ADMIN_TOKEN": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}, "", "server",
		"--redis-url", "redis://127.0.0.1:1"), exitError, append(refusal, "only 1 different")...)
}

func TestVersion(t *testing.T) {
	t.Parallel()
	r := runWith(t, nil, "", "version")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "sluice dev") || !strings.Contains(r.Stdout, runtime.Version()) {
		t.Fatalf("version: %+v", r)
	}
	r = runWith(t, nil, "", "version", "--json")
	var v struct {
		Version   string `json:"version"`
		GoVersion string `json:"go_version"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil || v.Version != "dev" || v.GoVersion != runtime.Version() {
		t.Fatalf("version --json: %+v (%v)", r, err)
	}
}

// TestBenchProcs: the load generator runs on --procs processors (1 unless asked) and gives the
// process its own number back when done.
func TestBenchProcs(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, c := range []struct {
		args []string
		want []int
	}{
		{nil, []int{1, 8}},
		{[]string{"--procs", "3"}, []int{3, 8}},
		{[]string{"--procs", "0"}, nil},
	} {
		var calls []int
		var out, errOut bytes.Buffer
		env := f.env()
		args := append([]string{"bench", "-n", "5", "-c", "1", "--scenarios", "publish"}, c.args...)
		code := MainEnv(t.Context(), args, &Env{
			Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return env[k] },
			SetProcs: func(n int) int { calls = append(calls, n); return 8 },
		})
		if code != 0 || !slices.Equal(calls, c.want) {
			t.Fatalf("bench %v: exit %d (%s), SetProcs calls %v, want %v", c.args, code, errOut.String(), calls, c.want)
		}
	}
}

func TestBench(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var rep loadgen.Report
	f.mustJSON(t, &rep, "bench", "-n", "130", "-c", "3", "--json")
	if len(rep.Results) != len(loadgen.Scenarios) {
		t.Fatalf("bench --json: %+v", rep)
	}
	for _, r := range rep.Results {
		if r.Jobs != 130 || r.JobsPerSecond <= 0 || r.P99Millis < r.P50Millis || r.Note != "" {
			t.Errorf("%s: %+v", r.Scenario, r)
		}
	}
	out := f.must(t, "bench", "-n", "20", "-c", "2", "--scenarios", "publish,consume", "--body", "10",
		"--cpu", "server="+strconv.Itoa(os.Getpid()))
	wantOut(t, out, "http://127.0.0.1", "2 clients", "20 jobs per scenario", "jobs/s", "p99 ms", "publish", "consume",
		"CPU µs per job: loadgen ", ", server ")

	// Every job the bench published was consumed and acked: nothing is left.
	var st struct {
		Queues []struct {
			Name                   string
			Ready, Leased, Dead    int64
			Published, Acked, Done int64
		}
	}
	f.mustJSON(t, &st, "stats", "--json")
	if len(st.Queues) != 4 {
		t.Errorf("bench used %d queues, want 4", len(st.Queues))
	}
	for _, q := range st.Queues {
		if !strings.HasPrefix(q.Name, "bench-") || q.Ready+q.Leased+q.Dead != 0 || q.Published != q.Acked {
			t.Errorf("bench left jobs behind: %+v", q)
		}
	}

	wantFail(t, f.run(t, "bench", "--scenarios", "publish,nap"), exitUsage, `unknown scenario "nap"`)
	wantFail(t, f.run(t, "bench", "--procs", "-1"), exitUsage, "--procs")
	wantFail(t, f.run(t, "bench", "--api", "soap"), exitUsage, "--api")
	r := runWith(t, f.env("SLUICE_TOKEN", "sk_wrong"), "", "bench", "-n", "5")
	wantFail(t, r, exitError, "publish: ", "HTTP 401")
}
