package tenant

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

func tokenSetup(t *testing.T) (*TokenStore, *redistest.Env) {
	t.Helper()
	env := redistest.New(t)
	return NewTokenStore(env.Client, env.Prefix, NewNamespaceStore(env.Client, env.Prefix), time.Second), env
}

// Pages of one namespace's tokens come in creation order, each token once, and hold none of the
// other namespaces' tokens.
func TestTokenPagesReadOneNamespace(t *testing.T) {
	t.Parallel()
	tokens, _ := tokenSetup(t)
	ctx := t.Context()
	var want []string
	for i := range 7 {
		_, tok, err := tokens.Create(ctx, CreateTokenParams{Namespace: "shop"})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, tok.ID)
		if _, _, err := tokens.Create(ctx, CreateTokenParams{Namespace: "other", Description: string(rune('a' + i))}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		page, next, err := tokens.Page(ctx, "shop", after, 3)
		if err != nil || pages > 3 {
			t.Fatalf("page %d: %v (%d pages)", pages, err, pages)
		}
		for _, tok := range page {
			if tok.Namespace != "shop" {
				t.Fatalf("page of shop holds %+v", tok)
			}
			got = append(got, tok.ID)
		}
		if next == "" {
			break
		}
		after = next
	}
	if len(got) != len(want) {
		t.Fatalf("pages gave %v, want %v", got, want)
	}
	seen := map[string]bool{}
	for _, id := range got {
		seen[id] = true
	}
	for _, id := range want {
		if !seen[id] {
			t.Fatalf("pages gave %v, want %v", got, want)
		}
	}
	if n, err := tokens.Count(ctx, "shop"); err != nil || n != 7 {
		t.Fatalf("Count = %d, %v", n, err)
	}
	if n, err := tokens.RevokeNamespace(ctx, "shop"); err != nil || n != 7 {
		t.Fatalf("RevokeNamespace = %d, %v", n, err)
	}
	if list, err := tokens.List(ctx, "other"); err != nil || len(list) != 7 {
		t.Fatalf("other namespace after revoking shop: %d, %v", len(list), err)
	}
}

// A cursor that is not a position a listing gave is refused as an invalid argument.
func TestTokenPageRefusesForgedCursors(t *testing.T) {
	t.Parallel()
	tokens, _ := tokenSetup(t)
	for _, c := range []string{"x", "(", "[a", "0000000000001:zz", "-", "+", "1:0123456789abcdef"} {
		var fe *sluice.FieldError
		if _, _, err := tokens.Page(t.Context(), "shop", c, 10); !errors.As(err, &fe) || fe.Field != "cursor" {
			t.Errorf("cursor %q: %v", c, err)
		}
	}
}

// Tokens written before the indexes existed (a record in the hash only) are indexed at start,
// once however often it runs.
func TestIndexTokensMigratesOldRecords(t *testing.T) {
	t.Parallel()
	tokens, env := tokenSetup(t)
	ctx := t.Context()
	for i := range 1200 {
		rec := tokenRecord{Token: Token{ID: IDOf(string(rune(i)) + "-secret"), Namespace: "old", CreatedAt: time.UnixMilli(int64(i))}}
		b, _ := json.Marshal(rec)
		if err := env.Client.HSet(ctx, tokens.key, rec.ID, b).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := tokens.Count(ctx, "old"); n != 0 {
		t.Fatalf("indexed before the migration: %d", n)
	}
	for range 2 {
		if n, err := tokens.IndexTokens(ctx); err != nil || n != 1200 {
			t.Fatalf("IndexTokens = %d, %v", n, err)
		}
		if n, _ := tokens.Count(ctx, "old"); n != 1200 {
			t.Fatalf("indexed %d of 1200", n)
		}
	}
}

// A namespace at its quota of tokens gets a QuotaError naming max_tokens and no new token; the
// other namespaces are not limited by it.
func TestTokenQuota(t *testing.T) {
	t.Parallel()
	tokens, _ := tokenSetup(t)
	ctx := t.Context()
	p := CreateTokenParams{Namespace: "shop", MaxTokens: 2}
	for range 2 {
		if _, _, err := tokens.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	var qe *sluice.QuotaError
	if _, _, err := tokens.Create(ctx, p); !errors.As(err, &qe) || qe.Quota != "max_tokens" || qe.Limit != 2 {
		t.Fatalf("third token: %v", err)
	}
	if n, _ := tokens.Count(ctx, "shop"); n != 2 {
		t.Fatalf("tokens after the refusal: %d", n)
	}
	if _, _, err := tokens.Create(ctx, CreateTokenParams{Namespace: "other", MaxTokens: 2}); err != nil {
		t.Fatal(err)
	}
}
