package tenant

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

func TestCheckSecret(t *testing.T) {
	t.Parallel()
	for secret, ok := range map[string]bool{
		"01HZX3K7Q9V2B8N4M6P0R5T1WA":      true, // lmstfy's generated form
		"worker-token-chosen-by-ops-2023": true,
		"sk_" + strings.Repeat("ab", 24):  true,
		strings.Repeat("!~", 10):          true,
		strings.Repeat("x", 512):          true,
		strings.Repeat("x", 19):           false, // lmstfy's own minimum is 20
		strings.Repeat("x", 513):          false,
		"pool:token-of-twenty-bytes":      false, // lmstfy clients read a pool before ':'
		"a token with spaces in it, no":   false,
		"tab\tseparated-token-of-20":      false,
		"non-ascii-token-é-twenty-bytes":  false,
		"":                                false,
	} {
		err := CheckSecret(secret)
		if (err == nil) != ok {
			t.Errorf("CheckSecret(%q) = %v, want ok %v", secret, err, ok)
		}
		var v *sluice.FieldError
		if err != nil && (!errors.As(err, &v) || v.Field != "secret") {
			t.Errorf("CheckSecret(%q) = %v, want a FieldError of field secret", secret, err)
		}
		if err != nil && len(secret) > 4 && strings.Contains(err.Error(), secret) {
			t.Errorf("the error shows the secret: %v", err)
		}
	}
}

func TestCreateWithChosenSecret(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	ctx := t.Context()
	namespaces := NewNamespaceStore(env.Client, env.Prefix)
	tokens := NewTokenStore(env.Client, env.Prefix, namespaces, time.Minute)
	const chosen = "01HZX3K7Q9V2B8N4M6P0R5T1WA"

	// A lookup before the token exists is cached as unknown; creating it forgets that.
	if _, err := tokens.Authenticate(ctx, chosen); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("Authenticate before creation: %v", err)
	}
	secret, tok, err := tokens.Create(ctx, CreateTokenParams{Namespace: "shop", Description: "from lmstfy", Secret: chosen})
	if err != nil {
		t.Fatal(err)
	}
	if secret != chosen || tok.Namespace != "shop" || !slices.Equal(tok.Permissions, AllPermissions) || tok.ID != hashSecret(chosen)[:idLen] {
		t.Fatalf("Create = %q, %+v", secret, tok)
	}
	got, err := tokens.Authenticate(ctx, chosen)
	if err != nil || got.ID != tok.ID {
		t.Fatalf("Authenticate(chosen) = %+v, %v", got, err)
	}
	// Only the hash is stored.
	raw, err := env.Client.HGetAll(ctx, env.Prefix+":auth:tokens").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range raw {
		if strings.Contains(v, chosen) {
			t.Fatalf("the stored record holds the secret: %s", v)
		}
	}

	// The same secret again, in this namespace or another, is ErrTokenExists and changes nothing.
	for _, ns := range []string{"shop", "other"} {
		if _, _, err := tokens.Create(ctx, CreateTokenParams{Namespace: ns, Description: "again", Secret: chosen}); !errors.Is(err, ErrTokenExists) {
			t.Fatalf("Create of an existing secret in %s: %v, want ErrTokenExists", ns, err)
		}
	}
	if ok, err := namespaces.Exists(ctx, "other"); err != nil || ok {
		t.Fatalf("a refused creation registered namespace other: %v %v", ok, err)
	}
	if list, err := tokens.List(ctx, ""); err != nil || len(list) != 1 || list[0].Description != "from lmstfy" {
		t.Fatalf("tokens after the duplicates: %+v %v", list, err)
	}

	// A bad secret is a validation error of field secret, and creates nothing.
	var v *sluice.FieldError
	if _, _, err := tokens.Create(ctx, CreateTokenParams{Namespace: "bad", Secret: "short"}); !errors.As(err, &v) || v.Field != "secret" {
		t.Fatalf("Create with a short secret: %v", err)
	}
	if ok, _ := namespaces.Exists(ctx, "bad"); ok {
		t.Fatal("a refused secret registered its namespace")
	}
}
