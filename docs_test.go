package sluice_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/docrun"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m, removeSluiceBin) }

// docFiles are the files whose examples TestDocsRun runs: README.md, docs/*.md and everything
// under deploy/.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, docs...)
	err = filepath.WalkDir("deploy", func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, filepath.ToSlash(path))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

var unsafeChars = regexp.MustCompile(`[^-_A-Za-z0-9:]`)

var sluiceBin = struct {
	once sync.Once
	dir  string
	path string
	err  error
	out  []byte
}{}

// removeSluiceBin removes the binary buildSluice built, once the tests are done.
func removeSluiceBin() {
	if sluiceBin.dir != "" {
		_ = os.RemoveAll(sluiceBin.dir)
	}
}

// buildSluice builds the sluice binary of this tree once per test binary.
func buildSluice(t *testing.T) string {
	t.Helper()
	sluiceBin.once.Do(func() {
		sluiceBin.dir, sluiceBin.err = os.MkdirTemp("", "sluice-docs-bin-")
		if sluiceBin.err != nil {
			return
		}
		sluiceBin.path = filepath.Join(sluiceBin.dir, "sluice")
		sluiceBin.out, sluiceBin.err = exec.Command("go", "build", "-o", sluiceBin.path, "./cmd/sluice").CombinedOutput()
	})
	if sluiceBin.err != nil {
		t.Fatalf("go build ./cmd/sluice: %v\n%s", sluiceBin.err, sluiceBin.out)
	}
	return sluiceBin.path
}

// runPlan runs every session of the plan as a parallel subtest, each on a sluice server of its
// own (on the shared test Redis under a prefix of its own, unless its doc starts the server).
func runPlan(t *testing.T, plan docrun.Plan, judge func(t *testing.T, s docrun.Session, res docrun.Result)) {
	t.Helper()
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the docs' examples need %s: sudo apt-get install -y %s", tool, tool)
		}
	}
	bin := buildSluice(t)
	for _, s := range plan.Sessions {
		// The name becomes the Redis key prefix of the session: letters, digits, '-' and '_'.
		t.Run(unsafeChars.ReplaceAllString(s.Name, "_"), func(t *testing.T) {
			t.Parallel()
			env := redistest.New(t)
			res, err := s.Run(context.Background(), docrun.Config{
				Sluice: bin, RedisURL: env.URL, Prefix: env.Prefix, Dir: t.TempDir(),
			})
			if err != nil {
				t.Fatal(err)
			}
			judge(t, s, res)
		})
	}
}

// TestDocsRun runs the shell examples of the docs (README.md, docs/*.md, deploy/) against real
// sluice servers, as a reader would paste them: every curl answer outside 2xx that the doc does
// not name fails, every failing command fails, and every shell block must run or be marked
// skipped with a reason (the convention is in docs/contributing.md).
func TestDocsRun(t *testing.T) {
	t.Parallel()
	blocks, err := docrun.Extract(".", docFiles(t))
	if err != nil {
		t.Fatal(err)
	}
	plan := docrun.NewPlan(blocks)
	for _, p := range plan.Problems {
		t.Error(p)
	}
	for _, b := range plan.Skipped {
		t.Logf("skipped %s: %s", b.Where(), b.Marker.Skip)
	}
	runPlan(t, plan, func(t *testing.T, _ docrun.Session, res docrun.Result) {
		for _, p := range res.Problems {
			t.Error(p)
		}
		if t.Failed() || testing.Verbose() {
			t.Logf("transcript:\n%s\nserver log:\n%s", res.Transcript, res.ServerLog)
		}
	})
}

// TestDocsRunCatchesFailures runs examples that must fail, so TestDocsRun is known to catch what
// it is there for: an answer outside 2xx that the doc does not name, a failing command, a
// variable no line set, and an admin call without the admin token a session is given.
func TestDocsRunCatchesFailures(t *testing.T) {
	t.Parallel()
	doc := strings.Join([]string{
		"<!-- docrun: session statuses; given T=token:shop -->", // line 1
		"```sh",
		`curl -s localhost:7777/v1/ns/shop/queues/emails -H "Authorization: Bearer $T"`, // line 3: 404, not named
		`curl -s localhost:7777/v1/ns/shop/queues/emails -H "Authorization: Bearer $T"   # 404 when it does not exist`,
		`curl -s -X POST localhost:7777/v1/ns/shop/queues/emails/pause -H "Authorization: Bearer $T"   # 204`,
		`curl -s localhost:7777/v1/ns/shop/queues/emails -H "Authorization: Bearer $T"   # now it exists: 200`,
		"```",
		"",
		"```sh",
		"sluice stats   # no token", // line 10: exits 1
		"echo not reached",
		"```",
		"",
		"```sh",
		`echo "$NO_LINE_SET_THIS"`, // line 15
		"```",
		"",
		"<!-- docrun: given ADMIN=admin -->",
		"```sh",
		`curl -s localhost:7778/v1/namespaces -H "Authorization: Bearer $ADMIN"`,
		`curl -s localhost:7778/v1/namespaces`, // line 21: 401
		"```",
	}, "\n")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "doc.md"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	blocks, err := docrun.Extract(dir, []string{"doc.md"})
	if err != nil {
		t.Fatal(err)
	}
	plan := docrun.NewPlan(blocks)
	want := map[string]string{
		"doc.md#statuses": "doc.md:3: answered HTTP 404",
		"doc.md:9":        "doc.md:10: the command failed (exit status 1)",
		"doc.md:14":       "doc.md:15: NO_LINE_SET_THIS: unbound variable",
		"doc.md:19":       "doc.md:21: answered HTTP 401",
	}
	if len(plan.Sessions) != len(want) {
		t.Fatalf("sessions: %+v", plan.Sessions)
	}
	runPlan(t, plan, func(t *testing.T, s docrun.Session, res docrun.Result) {
		if len(res.Problems) != 1 || !strings.HasPrefix(res.Problems[0], want[s.Name]) {
			t.Errorf("problems %q, want one that starts with %q\ntranscript:\n%s", res.Problems, want[s.Name], res.Transcript)
		}
	})
}
