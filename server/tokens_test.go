package server

import (
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"
)

func TestTokenStore(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := ctxT(t)
	prio := 5
	secret, tok, err := ts.Tokens.Create(ctx, CreateTokenParams{
		Namespace: "team-a", Description: "producer", Permissions: []Permission{PermPublish}, MaxPriority: &prio,
	})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Namespace != "team-a" || tok.MaxPriority != 5 || !tok.Allows(PermPublish) || tok.Allows(PermConsume) || len(tok.ID) != idLen {
		t.Fatalf("token = %+v", tok)
	}
	got, err := ts.Tokens.Authenticate(ctx, secret)
	if err != nil || got.ID != tok.ID {
		t.Fatalf("Authenticate = %+v, %v", got, err)
	}
	if _, err := ts.Tokens.Authenticate(ctx, secret+"x"); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("unknown secret: %v", err)
	}
	if ok, err := ts.srv.namespaces.Exists(ctx, "team-a"); err != nil || !ok {
		t.Fatalf("namespace registered by the token: %v %v", ok, err)
	}
	all := ts.token(t, "team-a")
	list, err := ts.Tokens.List(ctx, "team-a")
	if err != nil || len(list) != 2 || !slices.ContainsFunc(list, func(x Token) bool { return x.ID == tok.ID }) {
		t.Fatalf("List = %+v, %v", list, err)
	}
	if err := ts.Tokens.Revoke(ctx, "team-b", tok.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoke in another namespace: %v", err)
	}
	if err := ts.Tokens.Revoke(ctx, "team-a", tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Tokens.Authenticate(ctx, secret); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("revoked token on the same instance: %v", err)
	}
	if err := ts.Tokens.Revoke(ctx, "team-a", all); err != nil { // by secret
		t.Fatal(err)
	}
	ts.token(t, "team-a")
	ts.token(t, "team-a")
	n, err := ts.Tokens.revokeNamespace(ctx, "team-a")
	if err != nil || n != 2 {
		t.Fatalf("revokeNamespace = %d, %v", n, err)
	}
	if list, _ := ts.Tokens.List(ctx, ""); len(list) != 0 {
		t.Fatalf("left: %+v", list)
	}
	_, _, err = ts.Tokens.Create(ctx, CreateTokenParams{Namespace: "a b"})
	if e := apiError(err); e.Code != CodeInvalidArgument || e.Field != "namespace" {
		t.Fatalf("bad namespace: %v", err)
	}
	_, _, err = ts.Tokens.Create(ctx, CreateTokenParams{Namespace: "x", Permissions: []Permission{"root"}})
	if e := apiError(err); e.Field != "permissions" {
		t.Fatalf("bad permission: %v", err)
	}
	if !slices.Equal(AllPermissions, []Permission{PermPublish, PermConsume, PermManage}) {
		t.Fatal("AllPermissions changed")
	}
}

func TestAdminAuthRequired(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	r := do(t, http.MethodGet, ts.AdminURL+"/v1/namespaces", "", nil)
	wantStatus(t, r, http.StatusUnauthorized, "unauthenticated")
	r = do(t, http.MethodGet, ts.AdminURL+"/v1/namespaces", "wrong", nil)
	wantStatus(t, r, http.StatusUnauthorized, "unauthenticated")
	r = ts.adminDo(t, http.MethodGet, "/nope", nil)
	wantStatus(t, r, http.StatusNotFound, "not_found")
	r = ts.public(t, http.MethodGet, "/nope", "", nil)
	wantStatus(t, r, http.StatusNotFound, "not_found")
	eventually(t, 5*time.Second, "metrics", func() bool {
		return do(t, http.MethodGet, ts.AdminURL+"/metrics", "", nil).Status == http.StatusOK
	})
}
