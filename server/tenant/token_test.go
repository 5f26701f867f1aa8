package tenant

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestTokenStore(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	ctx := t.Context()
	namespaces := NewNamespaceStore(env.Client, env.Prefix)
	tokens := NewTokenStore(env.Client, env.Prefix, namespaces, time.Second)
	token := func(ns string) string {
		t.Helper()
		secret, _, err := tokens.Create(ctx, CreateTokenParams{Namespace: ns})
		if err != nil {
			t.Fatalf("create token: %v", err)
		}
		return secret
	}
	prio := 5
	secret, tok, err := tokens.Create(ctx, CreateTokenParams{
		Namespace: "team-a", Description: "producer", Permissions: []Permission{PermPublish}, MaxPriority: &prio,
	})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Namespace != "team-a" || tok.MaxPriority != 5 || !tok.Allows(PermPublish) || tok.Allows(PermConsume) || len(tok.ID) != idLen {
		t.Fatalf("token = %+v", tok)
	}
	got, err := tokens.Authenticate(ctx, secret)
	if err != nil || got.ID != tok.ID {
		t.Fatalf("Authenticate = %+v, %v", got, err)
	}
	if _, err := tokens.Authenticate(ctx, secret+"x"); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("unknown secret: %v", err)
	}
	if ok, err := namespaces.Exists(ctx, "team-a"); err != nil || !ok {
		t.Fatalf("namespace registered by the token: %v %v", ok, err)
	}
	all := token("team-a")
	list, err := tokens.List(ctx, "team-a")
	if err != nil || len(list) != 2 || !slices.ContainsFunc(list, func(x Token) bool { return x.ID == tok.ID }) {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if err := tokens.Revoke(ctx, "team-b", tok.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoke in another namespace: %v", err)
	}
	if err := tokens.Revoke(ctx, "team-a", tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := tokens.Authenticate(ctx, secret); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("revoked token on the same instance: %v", err)
	}
	if err := tokens.Revoke(ctx, "team-a", all); err != nil { // by secret
		t.Fatal(err)
	}
	token("team-a")
	token("team-a")
	n, err := tokens.RevokeNamespace(ctx, "team-a")
	if err != nil || n != 2 {
		t.Fatalf("revokeNamespace = %d, %v", n, err)
	}
	if list, _ := tokens.List(ctx, ""); len(list) != 0 {
		t.Fatalf("left: %+v", list)
	}
	_, _, err = tokens.Create(ctx, CreateTokenParams{Namespace: "a b"})
	if e := (*sluice.FieldError)(nil); !errors.As(err, &e) || e.Field != "namespace" {
		t.Fatalf("bad namespace: %v", err)
	}
	_, _, err = tokens.Create(ctx, CreateTokenParams{Namespace: "x", Permissions: []Permission{"root"}})
	if e := (*sluice.FieldError)(nil); !errors.As(err, &e) || e.Field != "permissions" {
		t.Fatalf("bad permission: %v", err)
	}
	if !slices.Equal(AllPermissions, []Permission{PermPublish, PermConsume, PermManage, PermTasks}) {
		t.Fatal("AllPermissions changed")
	}
}

// tasks:delegate (naming who a task is for) is given only by name: a token created without a
// permission list does not carry it, one that names it does, kept in the known order.
func TestDelegateIsGivenOnlyByName(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	ctx := t.Context()
	tokens := NewTokenStore(env.Client, env.Prefix, NewNamespaceStore(env.Client, env.Prefix), time.Second)
	_, plain, err := tokens.Create(ctx, CreateTokenParams{Namespace: "shop"})
	if err != nil || plain.Allows(PermTasksDelegate) || !plain.Allows(PermTasks) {
		t.Fatalf("default token %v (%v): want tasks without tasks:delegate", plain.Permissions, err)
	}
	secret, backend, err := tokens.Create(ctx, CreateTokenParams{Namespace: "shop", Permissions: []Permission{PermTasksDelegate, PermTasks}})
	if err != nil || !slices.Equal(backend.Permissions, []Permission{PermTasks, PermTasksDelegate}) {
		t.Fatalf("delegate token %v (%v)", backend.Permissions, err)
	}
	if got, err := tokens.Authenticate(ctx, secret); err != nil || !got.Allows(PermTasksDelegate) {
		t.Fatalf("authenticated delegate token: %v, %v", got.Permissions, err)
	}
}
