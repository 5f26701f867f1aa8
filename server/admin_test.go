package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/server/tenant"
)

func TestAdminNamespacesAndTokens(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	r := ts.adminDo(t, http.MethodPost, "/v1/namespaces", map[string]any{"name": "shop", "description": "the shop"})
	wantStatus(t, r, http.StatusCreated, "")
	r = ts.adminDo(t, http.MethodPost, "/v1/namespaces", map[string]any{"name": "shop"})
	wantStatus(t, r, http.StatusOK, "")
	var ns tenant.Namespace
	r.JSON(t, &ns)
	if ns.Description != "the shop" {
		t.Fatalf("existing namespace = %s", r.Body)
	}
	r = ts.adminDo(t, http.MethodPost, "/v1/namespaces", map[string]any{"name": "no/slash"})
	wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
	if r.ErrorField() != "name" {
		t.Fatalf("field = %q", r.ErrorField())
	}
	r = ts.adminDo(t, http.MethodGet, "/v1/namespaces/shop", nil)
	wantStatus(t, r, http.StatusOK, "")
	r = ts.adminDo(t, http.MethodGet, "/v1/namespaces/nope", nil)
	wantStatus(t, r, http.StatusNotFound, "not_found")

	r = ts.adminDo(t, http.MethodPost, "/v1/namespaces/shop/tokens", map[string]any{
		"description": "workers", "permissions": []string{"consume", "publish"}, "max_priority": 10,
	})
	wantStatus(t, r, http.StatusCreated, "")
	var created struct {
		Token       string   `json:"token"`
		ID          string   `json:"id"`
		Namespace   string   `json:"namespace"`
		Permissions []string `json:"permissions"`
		MaxPriority int      `json:"max_priority"`
	}
	r.JSON(t, &created)
	if !strings.HasPrefix(created.Token, "sk_") || created.ID == "" || created.Namespace != "shop" ||
		strings.Join(created.Permissions, ",") != "publish,consume" || created.MaxPriority != 10 {
		t.Fatalf("created = %s", r.Body)
	}
	for _, c := range []struct{ body, field string }{
		{`{"permissions": []}`, "permissions"},
		{`{"permissions": ["root"]}`, "permissions"},
		{`{"max_priority": 300}`, "max_priority"},
		{`{"max_priority": "high"}`, "max_priority"},
		{`{"scope": "all"}`, "scope"},
	} {
		r := ts.adminDo(t, http.MethodPost, "/v1/namespaces/shop/tokens", c.body)
		wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
		if r.ErrorField() != c.field {
			t.Fatalf("%s: field = %q, want %q", c.body, r.ErrorField(), c.field)
		}
	}
	r = ts.adminDo(t, http.MethodGet, "/v1/namespaces/shop/tokens", nil)
	wantStatus(t, r, http.StatusOK, "")
	if !strings.Contains(string(r.Body), created.ID) || strings.Contains(string(r.Body), created.Token) || strings.Contains(string(r.Body), "hash") {
		t.Fatalf("token list = %s", r.Body)
	}
	// The new token works on the public API; revoked, it does not.
	wantStatus(t, ts.public(t, http.MethodPost, qpath+"/jobs", created.Token, map[string]any{"payload": 1}), http.StatusCreated, "")
	r = ts.adminDo(t, http.MethodDelete, "/v1/namespaces/shop/tokens/"+created.ID, nil)
	wantStatus(t, r, http.StatusNoContent, "")
	r = ts.adminDo(t, http.MethodDelete, "/v1/namespaces/shop/tokens/"+created.ID, nil)
	wantStatus(t, r, http.StatusNotFound, "not_found")
	wantStatus(t, ts.public(t, http.MethodPost, qpath+"/jobs", created.Token, map[string]any{"payload": 1}), http.StatusUnauthorized, "unauthenticated")

	// Deleting a namespace revokes its tokens and deletes its queues.
	tok := ts.token(t, "shop")
	r = ts.adminDo(t, http.MethodGet, "/v1/namespaces", nil)
	if !strings.Contains(string(r.Body), `"shop"`) {
		t.Fatalf("namespaces = %s", r.Body)
	}
	r = ts.adminDo(t, http.MethodDelete, "/v1/namespaces/shop", nil)
	wantStatus(t, r, http.StatusOK, "")
	if !strings.Contains(string(r.Body), `"revoked_tokens":1`) || !strings.Contains(string(r.Body), `"deleted_queues":1`) {
		t.Fatalf("delete namespace = %s", r.Body)
	}
	wantStatus(t, ts.public(t, http.MethodGet, "/v1/ns/shop/queues", tok, nil), http.StatusUnauthorized, "unauthenticated")
	r = ts.adminDo(t, http.MethodDelete, "/v1/namespaces/shop", nil)
	wantStatus(t, r, http.StatusNotFound, "not_found")
}

func TestAdminNeedsTokenOffLoopback(t *testing.T) {
	t.Parallel()
	_, err := New(ctxT(t), Config{RedisURL: "redis://127.0.0.1:1", AdminAddr: "0.0.0.0:7778"})
	if err == nil || !strings.Contains(err.Error(), "admin_token") {
		t.Fatalf("New with an open admin listener: %v", err)
	}
}

func TestAdminWithoutTokenOnLoopback(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) { c.AdminToken = "" })
	wantStatus(t, do(t, http.MethodGet, ts.AdminURL+"/v1/namespaces", "", nil), http.StatusOK, "")
}

// Two instances on one Redis: a job published on one is consumed on the other, and a token
// revoked on one is refused by the other within a second.
func TestTwoInstances(t *testing.T) {
	t.Parallel()
	a := newTestServer(t)
	b := newTestServerOn(t, a.env)
	tok := a.token(t, "shop")
	r := a.public(t, http.MethodPost, qpath+"/jobs", tok, map[string]any{"payload": "hop"})
	wantStatus(t, r, http.StatusCreated, "")
	r = b.public(t, http.MethodPost, "/v1/ns/shop/consume", tok, map[string]any{"queues": []string{"emails"}, "timeout": 5})
	wantStatus(t, r, http.StatusOK, "")
	if !strings.Contains(string(r.Body), `"hop"`) {
		t.Fatalf("consume on b = %s", r.Body)
	}
	wantStatus(t, b.public(t, http.MethodGet, "/v1/ns/shop/queues", tok, nil), http.StatusOK, "") // b caches the token
	if err := a.Tokens.Revoke(ctxT(t), "shop", tok); err != nil {
		t.Fatal(err)
	}
	b.waitOutTokenCache() // every lookup b made started before the revoke
	wantStatus(t, b.public(t, http.MethodGet, "/v1/ns/shop/queues", tok, nil), http.StatusUnauthorized, "unauthenticated")
}

// The native admin API takes a chosen secret on token creation: stored hashed, usable at once on
// both APIs, 409 conflict when it exists, 400 naming the field when it breaks the rules.
func TestAdminTokenWithChosenSecret(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	const chosen = "vault-issued-token-0123456789"
	r := ts.adminDo(t, http.MethodPost, "/v1/namespaces/shop/tokens", map[string]any{
		"description": "from the vault", "permissions": []string{"publish"}, "secret": chosen,
	})
	var created struct {
		ID          string   `json:"id"`
		Token       string   `json:"token"`
		Permissions []string `json:"permissions"`
	}
	r.JSON(t, &created)
	if r.Status != http.StatusCreated || created.Token != chosen || len(created.ID) != 16 || len(created.Permissions) != 1 {
		t.Fatalf("create with a secret: %d %s", r.Status, r.Body)
	}
	if r := ts.public(t, http.MethodPost, "/v1/ns/shop/queues/q/jobs", chosen, map[string]any{"payload": 1}); r.Status != http.StatusCreated {
		t.Fatalf("publish with the chosen secret: %d %s", r.Status, r.Body)
	}
	if r := lmstfyDo(t, "PUT", ts.PublicURL+"/api/shop/q", []byte("x"), "X-Token", chosen); r.Status != http.StatusCreated {
		t.Fatalf("lmstfy publish with the chosen secret: %d %s", r.Status, r.Body)
	}
	// Again, in this namespace or another: 409, nothing created.
	for _, ns := range []string{"shop", "other"} {
		wantStatus(t, ts.adminDo(t, http.MethodPost, "/v1/namespaces/"+ns+"/tokens", map[string]any{"secret": chosen}), http.StatusConflict, "conflict")
	}
	wantStatus(t, ts.adminDo(t, http.MethodGet, "/v1/namespaces/other", nil), http.StatusNotFound, "not_found")
	var list struct{ Tokens []map[string]any }
	ts.adminDo(t, http.MethodGet, "/v1/namespaces/shop/tokens", nil).JSON(t, &list)
	if len(list.Tokens) != 1 {
		t.Fatalf("shop's tokens after the duplicates: %+v", list.Tokens)
	}
	for _, bad := range []string{"", "short", "has:a-colon-in-the-secret", "has spaces in the secret ok"} {
		r := ts.adminDo(t, http.MethodPost, "/v1/namespaces/shop/tokens", map[string]any{"secret": bad})
		wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
		if r.ErrorField() != "secret" {
			t.Fatalf("secret %q: field %q, want secret (%s)", bad, r.ErrorField(), r.Body)
		}
	}
}
