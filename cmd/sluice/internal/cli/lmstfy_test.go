package cli

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/server/tenant"
)

// lmstfy tokens as lmstfy's admin Redis holds them: generated ones and one a deployment chose.
const (
	lmWeb    = "01HZX3K7Q9V2B8N4M6P0R5T1WA"
	lmWorker = "worker-token-chosen-by-ops-2023"
	lmMail   = "01HZX3K7Q9V2B8N4M6P0R5T1WM"
	lmEU     = "01HZX3K7Q9V2B8N4M6P0R5T1WE"
)

// seedLmstfyAdmin writes an lmstfy admin Redis layout (tokens and a limit) under env's prefix.
func seedLmstfyAdmin(t *testing.T, env *redistest.Env, extra map[string]map[string]string) {
	t.Helper()
	ctx := context.Background()
	hashes := map[string]map[string]string{
		"tk/default/shop": {lmWeb: "web frontend", lmWorker: "order workers"},
		"tk/default/mail": {lmMail: "mailer"},
		"tk/eu/shop":      {lmEU: "eu shop"},
		"__throttler_keys__": {
			"default/shop/" + lmWeb: `{"read":100,"write":50,"interval":1}`,
		},
	}
	for k, v := range extra {
		hashes[k] = v
	}
	for key, fields := range hashes {
		for f, v := range fields {
			if err := env.Client.HSet(ctx, env.Prefix+key, f, v).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// lmstfyPublish publishes through the lmstfy route with an lmstfy token and returns the status.
func lmstfyPublish(t *testing.T, f *fixture, ns, token string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, f.PublicURL+"/api/"+ns+"/imported", strings.NewReader("hi"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Token", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

func TestLmstfyImport(t *testing.T) {
	t.Parallel()
	f := setup(t) // Sluice has namespace shop (and one token of its own) already
	lm := redistest.New(t)
	seedLmstfyAdmin(t, lm, nil)
	from := []string{"lmstfy", "import", "--from", lm.URL, "--from-prefix", lm.Prefix}

	type report struct {
		Applied bool         `json:"applied"`
		Steps   []importStep `json:"steps"`
	}
	tokenCount := func(ns string) int {
		var l struct {
			Tokens []map[string]any `json:"tokens"`
		}
		if _, err := newAPIClient(f.AdminURL, f.AdminToken, 0, &adminAPI).callJSON(context.Background(), http.MethodGet, tokensPath(ns), nil, nil, &l); err != nil {
			t.Fatal(err)
		}
		return len(l.Tokens)
	}

	// A dry run says what it would do and changes nothing.
	var dry report
	f.mustJSON(t, &dry, append(from, "--json")...)
	if dry.Applied {
		t.Error("a dry run reports applied")
	}
	byAction := func(r report) map[string]int {
		m := map[string]int{}
		for _, s := range r.Steps {
			m[s.Kind+":"+s.Action]++
		}
		return m
	}
	wantCounts := func(t *testing.T, r report, want map[string]int) {
		t.Helper()
		got := byAction(r)
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %d, want %d (steps %+v)", k, got[k], v, r.Steps)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("unexpected steps %s (steps %+v)", k, r.Steps)
			}
		}
	}
	wantCounts(t, dry, map[string]int{"namespace:create": 1, "namespace:exists": 1, "token:create": 3, "limit:set": 1, "token:skip": 1})
	if n := tokenCount("shop"); n != 1 {
		t.Errorf("after the dry run shop has %d tokens, want its 1", n)
	}
	if code := lmstfyPublish(t, f, "shop", lmWeb); code != http.StatusUnauthorized {
		t.Errorf("before the import an lmstfy token publishes: %d", code)
	}

	// --apply creates them, with lmstfy's secrets.
	var applied report
	f.mustJSON(t, &applied, append(from, "--apply", "--json")...)
	if !applied.Applied {
		t.Error("--apply reports not applied")
	}
	wantCounts(t, applied, map[string]int{"namespace:create": 1, "namespace:exists": 1, "token:create": 3, "limit:set": 1, "token:skip": 1})
	for ns, tok := range map[string]string{"shop": lmWeb, "mail": lmMail} {
		if code := lmstfyPublish(t, f, ns, tok); code != http.StatusCreated {
			t.Errorf("publish to %s with its imported lmstfy token: %d, want 201", ns, code)
		}
	}
	if code := lmstfyPublish(t, f, "shop", lmWorker); code != http.StatusCreated {
		t.Errorf("publish with the imported chosen token: %d, want 201", code)
	}
	if code := lmstfyPublish(t, f, "shop", "eu:"+lmEU); code != http.StatusNotFound {
		t.Errorf("a token of another lmstfy pool: %d, want 404 (not imported)", code)
	}
	if code := lmstfyPublish(t, f, "mail", lmWeb); code != http.StatusUnauthorized {
		t.Errorf("shop's token used on mail: %d, want 401", code)
	}
	var lim struct{ Read, Write, Interval int64 }
	if _, err := newAPIClient(f.AdminURL, f.AdminToken, 0, &adminAPI).callJSON(context.Background(), http.MethodGet,
		tokensPath("shop")+"/"+tenant.IDOf(lmWeb)+"/limit", nil, nil, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Read != 100 || lim.Write != 50 || lim.Interval != 1 {
		t.Errorf("imported limit = %+v, want read 100, write 50 per 1 s", lim)
	}

	// Again: everything exists, nothing changes.
	var again report
	f.mustJSON(t, &again, append(from, "--apply", "--json")...)
	wantCounts(t, again, map[string]int{"namespace:exists": 2, "token:exists": 3, "limit:unchanged": 1, "token:skip": 1})
	if n := tokenCount("shop"); n != 3 {
		t.Errorf("shop has %d tokens after two imports, want 3", n)
	}
	if n := tokenCount("mail"); n != 1 {
		t.Errorf("mail has %d tokens after two imports, want 1", n)
	}

	// The text report never shows a whole secret.
	out := f.must(t, from...)
	for _, s := range []string{lmWeb, lmWorker, lmMail, lmEU} {
		if strings.Contains(out, s) {
			t.Errorf("the report shows secret %s:\n%s", s, out)
		}
	}
	if !strings.Contains(out, "dry run") || !strings.Contains(out, "5 exists, 1 unchanged, 1 skip") {
		t.Errorf("report:\n%s", out)
	}
}

func TestLmstfyImportRefusedToken(t *testing.T) {
	t.Parallel()
	f := setup(t)
	lm := redistest.New(t)
	// lmstfy once let anything through; Sluice refuses a secret under 20 bytes.
	seedLmstfyAdmin(t, lm, map[string]map[string]string{"tk/default/legacy": {"short-token": "old"}})
	r := f.run(t, "lmstfy", "import", "--from", lm.URL, "--from-prefix", lm.Prefix, "--apply")
	wantFail(t, r, 1, "1 step(s) failed")
	if !strings.Contains(r.Stdout, "legacy/shor…") || !strings.Contains(r.Stdout, "failed") {
		t.Errorf("report lacks the refused token:\n%s", r.Stdout)
	}
	// The others were imported all the same.
	if code := lmstfyPublish(t, f, "shop", lmWeb); code != http.StatusCreated {
		t.Errorf("publish with an imported token after a partial failure: %d", code)
	}
}

func TestLmstfyImportUsage(t *testing.T) {
	t.Parallel()
	f := setup(t)
	wantFail(t, f.run(t, "lmstfy", "import"), 2, "--from is required")
	wantFail(t, f.run(t, "lmstfy", "import", "--from", "http://x"), 2, "--from")
}
