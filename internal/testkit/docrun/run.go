package docrun

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

//go:embed prelude.bash
var prelude string

// Config is what a session runs with.
type Config struct {
	// Sluice is the sluice binary, built from the tree.
	Sluice string
	// RedisURL is the Redis of the harness's servers (a session that starts its own server with a
	// doc's `sluice server` line runs it as the doc says: on its embedded Redis).
	RedisURL string
	// Prefix is the key prefix of the harness's server on RedisURL, unique to the session.
	Prefix string
	// Dir is an empty directory of the session's own.
	Dir string
	// Timeout bounds the session. Default 2 minutes.
	Timeout time.Duration
}

// Result is how a session went.
type Result struct {
	// Problems are the failures, each naming the doc line: a status the doc does not expect, a
	// command that failed, a session that did not finish. Empty when the session passed.
	Problems []string
	// Transcript is what the session printed (stdout and stderr), to read when it failed.
	Transcript string
	// ServerLog is what the session's server printed.
	ServerLog string
}

// attempts is how often a session is started again when its server could not bind a port that
// was free when the session chose it (another process took it in between).
const attempts = 3

// Run runs the session in bash against a sluice server of its own and judges what happened.
func (s Session) Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Minute
	}
	var res Result
	var err error
	for attempt := range attempts {
		res, err = s.runOnce(ctx, cfg, filepath.Join(cfg.Dir, "attempt"+strconv.Itoa(attempt)))
		if err != nil || !strings.Contains(res.ServerLog, "address already in use") {
			break
		}
	}
	return res, err
}

func (s Session) runOnce(ctx context.Context, cfg Config, dir string) (Result, error) {
	var res Result
	ports, err := freePorts(ctx)
	if err != nil {
		return res, err
	}
	if len(s.Upstreams) > 0 {
		up := httptest.NewServer(http.HandlerFunc(answerUpstream))
		defer up.Close()
		ports.Upstream = up.Listener.Addr().(*net.TCPAddr).Port
	}
	sc, err := s.script(ports)
	if err != nil {
		return res, err
	}
	work, harness := filepath.Join(dir, "work"), filepath.Join(dir, "harness")
	bin := filepath.Join(harness, "bin")
	for _, d := range []string{work, bin} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return res, err
		}
	}
	if err := os.Symlink(cfg.Sluice, filepath.Join(bin, "sluice")); err != nil {
		return res, err
	}
	files := map[string]string{
		filepath.Join(harness, "prelude.bash"): prelude,
		filepath.Join(harness, "session.bash"): sc.text,
	}
	for name, text := range s.Files {
		files[filepath.Join(work, name)] = s.rewrite(text, ports)
	}
	for path, text := range files {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			return res, err
		}
	}
	env, err := s.environ(cfg, ports, harness, work)
	if err != nil {
		return res, err
	}

	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(harness, "session.bash")) //nolint:gosec // the script written above
	cmd.Dir, cmd.Env = work, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	// Its own process group, so the servers it starts in the background end with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	runErr := cmd.Run()
	if cmd.Process != nil {
		endGroup(cmd.Process.Pid)
	}
	res.Transcript = out.String()
	log, _ := os.ReadFile(filepath.Join(harness, "server.log")) //nolint:gosec // the session's own log
	res.ServerLog = string(log)

	res.Problems = append(res.Problems, sc.judgeCalls(filepath.Join(harness, "calls"))...)
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		res.Problems = append(res.Problems, fmt.Sprintf("%s: did not finish within %s", s.Name, cfg.Timeout))
	case errors.As(runErr, &exit):
		res.Problems = append(res.Problems, sc.judgeFailure(filepath.Join(harness, "failed"), res.Transcript, s.Name, exit.ExitCode()))
	case runErr != nil:
		return res, runErr
	}
	return res, nil
}

// environ is the session's environment: the test's own without any SLUICE_ setting, the bin
// directory with sluice first on PATH, HOME in the work directory (no user's curlrc), the CLI
// pointed at the session's server, and the harness's settings.
func (s Session) environ(cfg Config, ports Ports, harness, work string) ([]string, error) {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLUICE_") && !strings.HasPrefix(kv, "DOCRUN_") &&
			!strings.HasPrefix(kv, "HOME=") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	pub, adm := "127.0.0.1:"+strconv.Itoa(ports.Public), "127.0.0.1:"+strconv.Itoa(ports.Admin)
	var given []string
	adminToken := ""
	for _, g := range s.Given {
		given = append(given, g.Var+"="+g.Source)
		if g.Source == "admin" && adminToken == "" {
			var err error
			if adminToken, err = newAdminToken(); err != nil {
				return nil, err
			}
		}
	}
	env = append(env,
		"PATH="+filepath.Join(harness, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+work,
		"SLUICE_PUBLIC_ADDR="+pub, "SLUICE_ADMIN_ADDR="+adm,
		"SLUICE_URL=http://"+pub, "SLUICE_ADMIN_URL=http://"+adm,
		"DOCRUN_DIR="+harness, "DOCRUN_PRELUDE="+filepath.Join(harness, "prelude.bash"),
		"DOCRUN_ADMIN_PORT="+strconv.Itoa(ports.Admin),
		"DOCRUN_REDIS_URL="+cfg.RedisURL, "DOCRUN_PREFIX="+cfg.Prefix,
		"DOCRUN_GIVEN="+strings.Join(given, " "), "DOCRUN_ADMIN_TOKEN="+adminToken,
	)
	if adminToken != "" {
		env = append(env, "SLUICE_ADMIN_TOKEN="+adminToken)
	}
	if len(s.Upstreams) > 0 {
		// The upstream stands in for a public host, on loopback.
		env = append(env, "SLUICE_RELAY_ALLOW_PRIVATE=true", "SLUICE_CALLBACK_ALLOW_PRIVATE=true")
	}
	return env, nil
}

// answerUpstream is the harness's upstream: 200 and a small JSON body saying what it was asked.
func answerUpstream(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(struct {
		Method string `json:"method"`
		Path   string `json:"path"`
	}{r.Method, r.URL.Path})
}

// newAdminToken makes a strong admin token: 32 characters of random base64url.
func newAdminToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// judgeCalls reads the curl calls the session made ("line status exit" per line) and returns one
// problem for each answer outside 2xx that its command's comments do not name.
func (sc script) judgeCalls(path string) []string {
	var problems []string
	for _, f := range readRecords(path) {
		if len(f) != 3 {
			continue
		}
		line, _ := strconv.Atoi(f[0])
		status, _ := strconv.Atoi(f[1])
		o, ok := sc.origins[line]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("line %d of the session script made a curl call that answered %s", line, f[1]))
		case status == 0:
			problems = append(problems, fmt.Sprintf("%s: curl got no answer (curl exit status %s)", o.where(), f[2]))
		case status >= 200 && status < 300, slices.Contains(o.cmd.expectedStatuses(), status):
		default:
			problems = append(problems, fmt.Sprintf("%s: answered HTTP %d, which the doc does not say to expect (a status it means is named in the command's comment, e.g. \"# 404 when ...\")", o.where(), status))
		}
	}
	return problems
}

// bashErrorRE is how bash reports an error of its own (an unset variable, a syntax error).
var bashErrorRE = regexp.MustCompile(`session\.bash: line (\d+): (.*)`)

// judgeFailure names the command that ended the session with exit code code: the one the ERR
// trap recorded, or the line of an error bash reported itself (set -u ends the shell without the
// trap).
func (sc script) judgeFailure(path, transcript, session string, code int) string {
	if m := bashErrorRE.FindStringSubmatch(transcript); m != nil {
		line, _ := strconv.Atoi(m[1])
		if o, ok := sc.origins[line]; ok {
			return fmt.Sprintf("%s: %s", o.where(), m[2])
		}
	}
	for _, f := range readRecords(path) {
		if len(f) != 2 {
			continue
		}
		line, _ := strconv.Atoi(f[0])
		if o, ok := sc.origins[line]; ok {
			return fmt.Sprintf("%s: the command failed (exit status %s)", o.where(), f[1])
		}
		return fmt.Sprintf("%s: the harness failed at line %d of the session script (exit status %s)", session, line, f[1])
	}
	return fmt.Sprintf("%s: bash exited with status %d", session, code)
}

func readRecords(path string) [][]string {
	f, err := os.Open(path) //nolint:gosec // a record file of the session's harness directory
	if err != nil {
		return nil
	}
	defer f.Close()
	var recs [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		recs = append(recs, strings.Fields(sc.Text()))
	}
	return recs
}

// endGroup stops what the session left running in its process group (its servers): SIGTERM,
// then SIGKILL for what is still there after a few seconds. It returns once none is left, so the
// session's directory can be removed.
func endGroup(pgid int) {
	if syscall.Kill(-pgid, syscall.SIGTERM) != nil {
		return // nothing left
	}
	for range 100 {
		if !groupAlive(pgid) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	for i := 0; i < 100 && groupAlive(pgid); i++ {
		time.Sleep(50 * time.Millisecond)
	}
}

// groupAlive reports whether a process of the group still runs (a zombie that nobody reaped does
// not count), from /proc.
func groupAlive(pgid int) bool {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		data, err := os.ReadFile(path) //nolint:gosec // a /proc/<pid>/stat file
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, so read after its last ')'.
		end := bytes.LastIndexByte(data, ')')
		if end < 0 {
			continue
		}
		f := strings.Fields(string(data[end+1:]))
		if len(f) >= 3 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" {
			return true
		}
	}
	return false
}

// freePorts picks two loopback ports nobody listens on now.
func freePorts(ctx context.Context) (Ports, error) {
	var ports [2]int
	var lc net.ListenConfig
	for i := range ports {
		l, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return Ports{}, err
		}
		defer l.Close()
		ports[i] = l.Addr().(*net.TCPAddr).Port
	}
	return Ports{Public: ports[0], Admin: ports[1]}, nil
}
