package docrun

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// extractText writes text to a file named name in a temporary directory and extracts it.
func extractText(t *testing.T, name, text string) ([]Block, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return Extract(dir, []string{name})
}

func TestExtractMarkdown(t *testing.T) {
	t.Parallel()
	blocks, err := extractText(t, "doc.md", strings.Join([]string{
		"# Title",
		"<!-- docrun: session one; given T=token:shop -->",
		"```sh",
		"curl -s localhost:7777/healthz",
		"```",
		"",
		"1. A list item:",
		"",
		"   <!-- docrun: skip needs an lmstfy deployment -->",
		"   ```bash",
		"   sluice lmstfy import --from redis://lmstfy:6379",
		"   ```",
		"````json",
		"{\"a\": 1}",
		"```",
		"````",
	}, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 3 {
		t.Fatalf("got %d blocks, want 3: %+v", len(blocks), blocks)
	}
	b := blocks[0]
	if b.Line != 4 || b.Lang != "sh" || b.Marker.Session != "one" || !slices.Equal(b.Text, []string{"curl -s localhost:7777/healthz"}) {
		t.Errorf("first block: %+v", b)
	}
	if !slices.Equal(b.Marker.Given, []Given{{Var: "T", Source: "token:shop"}}) {
		t.Errorf("given: %+v", b.Marker.Given)
	}
	if b := blocks[1]; b.Marker.Skip != "needs an lmstfy deployment" || b.Text[0] != "sluice lmstfy import --from redis://lmstfy:6379" {
		t.Errorf("indented block: %+v", b)
	}
	if b := blocks[2]; b.Lang != "json" || len(b.Text) != 2 {
		t.Errorf("a longer fence holds a shorter one: %+v", b)
	}
}

func TestExtractRefusesBadMarkers(t *testing.T) {
	t.Parallel()
	for name, text := range map[string]string{
		"dangling":        "<!-- docrun: skip for no block -->\nSome prose.\n",
		"at the end":      "text\n<!-- docrun: session a -->\n",
		"skip, no reason": "<!-- docrun: skip -->\n```sh\ntrue\n```\n",
		"unknown":         "<!-- docrun: sesion a -->\n```sh\ntrue\n```\n",
		"bad given":       "<!-- docrun: given T=whatever -->\n```sh\ntrue\n```\n",
		"two lines":       "<!-- docrun: session a\n-->\n```sh\ntrue\n```\n",
		"never closes":    "```sh\ntrue\n",
	} {
		if _, err := extractText(t, "doc.md", text); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestExtractCommentCommands(t *testing.T) {
	t.Parallel()
	blocks, err := extractText(t, "deploy/site.conf", strings.Join([]string{
		"# Create the room:",
		"# docrun: session rooms",
		"#   curl -X PUT localhost:7778/v1/rooms/shop \\",
		"#     -d '{}'",
		"#   sluice endpoint list",
		"server { listen 80; }  # sluice server's port",
	}, "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 1 {
		t.Fatalf("got %d blocks, want 1: %+v", len(blocks), blocks)
	}
	want := []string{`curl -X PUT localhost:7778/v1/rooms/shop \`, `-d '{}'`, "sluice endpoint list"}
	if b := blocks[0]; b.Line != 3 || b.Marker.Session != "rooms" || !slices.Equal(b.Text, want) {
		t.Errorf("block: %+v", b)
	}
}

func TestCommandsAndExpectedStatuses(t *testing.T) {
	t.Parallel()
	cmds := commands([]string{
		`A=http://127.0.0.1:7778   # add the admin token`,
		``,
		`curl -s $A/x -d '{"a": "#not a comment",`,
		`  "b": 1}'   # 201 created`,
		`# 409 conflict when it exists`,
		`curl -s $A/y \`,
		`  -H 'X: y'`,
		`# {"limit": 100, "max_queued":500} (200)`,
		`cat <<EOF`,
		`# inside a here-document`,
		`EOF`,
		`echo "$#" "${#A}" | wc -c  # counts`,
	})
	if len(cmds) != 5 {
		t.Fatalf("got %d commands, want 5: %+v", len(cmds), cmds)
	}
	if c := cmds[1]; c.first != 2 || c.last != 3 || !slices.Equal(c.expectedStatuses(), []int{201, 409}) {
		t.Errorf("multi-line command: %+v, statuses %v", c, c.expectedStatuses())
	}
	if c := cmds[2]; c.first != 5 || c.last != 6 || !slices.Equal(c.expectedStatuses(), []int{200}) {
		t.Errorf("continued command: %+v, statuses %v (JSON values are no statuses)", c, c.expectedStatuses())
	}
	if c := cmds[3]; c.first != 8 || c.last != 10 || len(c.comments) != 0 {
		t.Errorf("here-document: %+v", c)
	}
	if c := cmds[4]; c.code != `echo "$#" "${#A}" | wc -c` {
		t.Errorf("# inside words: %q", c.code)
	}
}

func TestPlanProblems(t *testing.T) {
	t.Parallel()
	blocks := []Block{
		{File: "a.md", Line: 2, Lang: "", Text: []string{"curl -s localhost:7777/healthz"}},
		{File: "a.md", Line: 6, Lang: "text", Text: []string{"$ sluice stats", "QUEUE READY"}},
		{File: "a.md", Line: 9, Lang: "text", Text: []string{"sluice publish [flags] <queue>"}},
		{File: "a.md", Line: 12, Lang: "json", Text: []string{"{}"}, Marker: Marker{File: "x.json", Line: 11}},
		{File: "a.md", Line: 15, Lang: "sh", Text: []string{"true"}, Marker: Marker{File: "y.json", Line: 14}},
		{File: "a.md", Line: 18, Lang: "sh", Text: []string{"make test"}, Marker: Marker{Skip: "runs the suite", Line: 17}},
		{File: "a.md", Line: 21, Lang: "json", Text: []string{`{"a": 1}`}, Marker: Marker{File: "c.json", Session: "s", Line: 20}},
		{File: "a.md", Line: 24, Lang: "sh", Text: []string{"cat c.json"}, Marker: Marker{Session: "s", Line: 23}},
		{File: "a.md", Line: 27, Lang: "console", Text: []string{"$ sluice stats"}},
	}
	p := NewPlan(blocks)
	wantProblems := []string{"a.md:2: a command", "a.md:6: a command", "a.md:11: file x.json belongs to no session", "a.md:14: file marks"}
	if len(p.Problems) != len(wantProblems) {
		t.Fatalf("problems: %q", p.Problems)
	}
	for i, w := range wantProblems {
		if !strings.HasPrefix(p.Problems[i], w) {
			t.Errorf("problem %d: %q, want it to start with %q", i, p.Problems[i], w)
		}
	}
	if len(p.Skipped) != 1 || p.Skipped[0].Line != 18 {
		t.Errorf("skipped: %+v", p.Skipped)
	}
	if len(p.Sessions) != 2 || p.Sessions[0].Name != "a.md#s" || p.Sessions[0].Files["c.json"] != "{\"a\": 1}\n" || p.Sessions[1].Name != "a.md:27" {
		t.Errorf("sessions: %+v", p.Sessions)
	}
}

func TestScript(t *testing.T) {
	t.Parallel()
	s := Session{
		Name: "a.md#s",
		Blocks: []Block{
			{File: "a.md", Line: 10, Lang: "sh", Text: []string{
				"sluice server --config c.json &   # prints a token",
				"export SLUICE_TOKEN=sk_...   # printed by the first start",
			}},
			{File: "a.md", Line: 20, Lang: "console", Text: []string{
				"$ curl -s http://localhost:7777/x 'https://api.example.com/hooks' 127.0.0.1:7778",
				"HTTP 404",
			}},
		},
		Given:     []Given{{Var: "SLUICE_TOKEN", Source: "printed"}},
		Upstreams: []string{"api.example.com"},
	}
	sc, err := s.script(Ports{Public: 1001, Admin: 1002, Upstream: 1003})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(sc.text, "\n")
	want := []string{
		`source "$DOCRUN_PRELUDE"`,
		`docrun_block "a.md:10"`,
		`docrun_server --config c.json`,
		`: given by the harness: SLUICE_TOKEN`,
		`docrun_block "a.md:20"`,
		`curl -s http://127.0.0.1:1001/x 'http://127.0.0.1:1003/hooks' 127.0.0.1:1002`,
		`# HTTP 404`,
	}
	if !slices.Equal(lines[:len(want)], want) {
		t.Errorf("script:\n%s\nwant:\n%s", sc.text, strings.Join(want, "\n"))
	}
	if o := sc.origins[6]; o.where() != "a.md:20" || !slices.Equal(o.cmd.expectedStatuses(), []int{404}) {
		t.Errorf("line 6 comes from %s expecting %v", o.where(), o.cmd.expectedStatuses())
	}
	if _, ok := sc.origins[5]; ok {
		t.Error("the harness's own line has a doc origin")
	}

	// Without a server line the harness starts one first.
	s.Blocks = s.Blocks[1:]
	sc, err = s.script(Ports{Public: 1001, Admin: 1002})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(strings.Split(sc.text, "\n")[1], "docrun_server --redis-url") {
		t.Errorf("no harness server:\n%s", sc.text)
	}
}
