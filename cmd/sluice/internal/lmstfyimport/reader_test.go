package lmstfyimport

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// Secrets as lmstfy stores them: its own (ULID-like) and ones a deployment chose.
const (
	secretWeb    = "01HZX3K7Q9V2B8N4M6P0R5T1WA"
	secretWorker = "worker-token-chosen-by-ops-2023"
	secretMail   = "01HZX3K7Q9V2B8N4M6P0R5T1WM"
	secretOther  = "01HZX3K7Q9V2B8N4M6P0R5T1WO"
)

// seedLmstfy writes an lmstfy admin Redis layout under prefix, as lmstfy's TokenManager and
// Throttler write it.
func seedLmstfy(t *testing.T, env *redistest.Env) {
	t.Helper()
	ctx := context.Background()
	rdb, pre := env.Client, env.Prefix
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(rdb.HSet(ctx, pre+"tk/default/shop", secretWeb, "web frontend", secretWorker, "order workers").Err())
	must(rdb.HSet(ctx, pre+"tk/default/mail", secretMail, "mailer").Err())
	must(rdb.HSet(ctx, pre+"tk/eu-pool/shop", secretOther, "eu shop").Err())
	must(rdb.HSet(ctx, pre+"tk/default/bad.name", "01HZX3K7Q9V2B8N4M6P0R5T1WB", "dotted").Err())
	must(rdb.Set(ctx, pre+"tk/default/notahash", "x", 0).Err())
	must(rdb.HSet(ctx, pre+"tk/nopool", "a", "b").Err())
	must(rdb.HSet(ctx, pre+"__throttler_keys__",
		"default/shop/"+secretWeb, `{"read":100,"write":50,"interval":1}`,
		"default/mail/"+secretMail, `not json`,
		"default/shop/01HZX3K7Q9V2B8N4M6P0R5T1WZ", `{"read":1,"write":1,"interval":1}`,
		"eu-pool/shop/"+secretOther, `{"read":1,"write":1,"interval":1}`,
		"garbage", `{}`,
	).Err())
}

func TestRead(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		seedLmstfy(t, env)
		ctx := context.Background()
		before := dump(t, env)

		p, err := Read(ctx, env.Client, Config{Prefix: env.Prefix})
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"mail", "shop"}; !slices.Equal(p.Namespaces, want) {
			t.Errorf("namespaces = %v, want %v", p.Namespaces, want)
		}
		want := []Token{
			{Namespace: "mail", Secret: secretMail, Description: "mailer"},
			{Namespace: "shop", Secret: secretWeb, Description: "web frontend", Limit: &Limit{Read: 100, Write: 50, Interval: 1}},
			{Namespace: "shop", Secret: secretWorker, Description: "order workers"},
		}
		if len(p.Tokens) != len(want) {
			t.Fatalf("tokens = %+v, want %+v", p.Tokens, want)
		}
		for i, w := range want {
			g := p.Tokens[i]
			if g.Namespace != w.Namespace || g.Secret != w.Secret || g.Description != w.Description ||
				(g.Limit == nil) != (w.Limit == nil) || (g.Limit != nil && *g.Limit != *w.Limit) {
				t.Errorf("token %d = %+v (limit %v), want %+v (limit %v)", i, g, g.Limit, w, w.Limit)
			}
		}
		wantSkips := map[string]string{
			"token shop/01HZ…":                          "pool eu-pool: Sluice has one pool (default); a client naming pool eu-pool would get 404",
			"token bad.name/01HZ…":                      "namespace name must match ^[-_A-Za-z0-9]+$ and be at most 255 bytes",
			"key " + env.Prefix + "tk/default/notahash": "not a hash",
			"key " + env.Prefix + "tk/nopool":           "not an lmstfy token hash (want tk/{pool}/{namespace})",
			"limit default/shop/01HZ…":                  "no such token to import",
			"limit eu-pool/shop/01HZ…":                  "pool eu-pool: Sluice has one pool (default)",
			"limit garbage":                             "not {pool}/{namespace}/{token}",
		}
		got := map[string]string{}
		for _, s := range p.Skipped {
			if _, dup := got[s.What]; dup && s.What != "limit default/mail/01HZ…" {
				t.Errorf("skip %q listed twice", s.What)
			}
			got[s.What] = s.Reason
		}
		for what, reason := range wantSkips {
			if got[what] != reason {
				t.Errorf("skip %q: reason %q, want %q", what, got[what], reason)
			}
		}
		if r := got["limit default/mail/01HZ…"]; !strings.HasPrefix(r, "not a limit: ") {
			t.Errorf("the unreadable limit of mail: reason %q", r)
		}
		if len(p.Skipped) != len(wantSkips)+1 {
			t.Errorf("skipped = %+v, want %d entries", p.Skipped, len(wantSkips)+1)
		}
		for _, s := range p.Skipped {
			for _, secret := range []string{secretWeb, secretWorker, secretMail, secretOther} {
				if strings.Contains(s.What+s.Reason, secret) {
					t.Errorf("skip %+v shows a whole secret", s)
				}
			}
		}
		if after := dump(t, env); !maps.Equal(before, after) {
			t.Errorf("Read changed the lmstfy Redis: before %v, after %v", before, after)
		}
	})
}

func TestReadEmpty(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	p, err := Read(context.Background(), env.Client, Config{Prefix: env.Prefix})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Namespaces)+len(p.Tokens)+len(p.Skipped) != 0 {
		t.Errorf("plan of an empty Redis = %+v", p)
	}
}

func TestReadGlobPrefix(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	ctx := context.Background()
	// A prefix with glob characters matches itself only.
	pre := env.Prefix + "[x]*"
	if err := env.Client.HSet(ctx, pre+"tk/default/ns", secretWeb, "d").Err(); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.HSet(ctx, env.Prefix+"xZZtk/default/other", secretMail, "d").Err(); err != nil {
		t.Fatal(err)
	}
	p, err := Read(ctx, env.Client, Config{Prefix: pre})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Tokens) != 1 || p.Tokens[0].Namespace != "ns" {
		t.Errorf("tokens = %+v, want the one under the literal prefix", p.Tokens)
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"": "…", "abcd": "…", "abcde": "abcd…"} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// dump returns every key of the test with a string form of its value.
func dump(t *testing.T, env *redistest.Env) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := scanKeys(ctx, env.Client, globEscape(env.Prefix)+"*")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		v, err := env.Client.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		out[k] = v
	}
	return out
}
