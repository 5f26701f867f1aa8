package server

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/server/tenant"
)

func TestLmstfyTokens(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	r := ts.adminDo(t, "POST", "/token/tns?description=first", nil)
	var created struct{ Token string }
	r.JSON(t, &created)
	if r.Status != http.StatusCreated || !strings.HasPrefix(created.Token, "sk_") {
		t.Fatalf("POST /token: %d %s", r.Status, r.Body)
	}
	tok, err := ts.Tokens.Authenticate(ctxT(t), created.Token)
	if err != nil || tok.Namespace != "tns" || tok.Description != "first" || len(tok.Permissions) != len(tenant.AllPermissions) {
		t.Fatalf("created token %+v %v", tok, err)
	}
	// The description may come as a form field; ?pool=default names the pool in the token.
	form := "description=" + url.QueryEscape("second one")
	r = lmstfyDo(t, "POST", ts.AdminURL+"/token/tns?pool=default", []byte(form),
		"Content-Type", "application/x-www-form-urlencoded", "Authorization", "Bearer "+ts.AdminToken)
	var second struct{ Token string }
	r.JSON(t, &second)
	if r.Status != http.StatusCreated || !strings.HasPrefix(second.Token, "default:sk_") {
		t.Fatalf("POST /token with a form: %d %s", r.Status, r.Body)
	}
	secondTok, err := ts.Tokens.Authenticate(ctxT(t), strings.TrimPrefix(second.Token, "default:"))
	if err != nil {
		t.Fatal(err)
	}

	// GET lists ids (Sluice keeps only hashes of the secrets) with their descriptions.
	wantLmstfy(t, ts.adminDo(t, "GET", "/token/tns", nil), 200,
		map[string]any{"tokens": map[string]string{tok.ID: "first", secondTok.ID: "second one"}})
	wantLmstfy(t, ts.adminDo(t, "GET", "/token/empty", nil), 200, map[string]any{"tokens": map[string]string{}})

	// DELETE by secret and by id; unknown tokens answer 204 as lmstfy's do.
	wantLmstfy(t, ts.adminDo(t, "DELETE", "/token/tns/"+created.Token, nil), 204, nil)
	wantLmstfy(t, ts.adminDo(t, "DELETE", "/token/tns/"+secondTok.ID, nil), 204, nil)
	wantLmstfy(t, ts.adminDo(t, "DELETE", "/token/tns/sk_unknown", nil), 204, nil)
	wantLmstfy(t, ts.adminDo(t, "GET", "/token/tns", nil), 200, map[string]any{"tokens": map[string]string{}})
	if _, err := ts.Tokens.Authenticate(ctxT(t), created.Token); err == nil {
		t.Fatal("a deleted token still authenticates")
	}

	bad := []struct{ path, msg string }{
		{"/token/tns", "invalid description"},
		{"/token/tns?description=x&token=mytoken", "the user token was too short"},
		{"/token/tns?description=x&token=" + url.QueryEscape("a chosen token with spaces"), "invalid token: byte 1 (0x20) is not allowed: a chosen secret is 20 to 512 bytes of printable ASCII (no spaces or control characters) without ':'"},
		{"/token/tns?description=x&token=default:short-after-pool", "invalid token: 16 bytes is too short: a chosen secret is 20 to 512 bytes of printable ASCII (no spaces or control characters) without ':'"},
		{"/token/tns?description=x&token=other:lmstfy-token-of-another-pool", "the pool was not exists"},
		{"/token/bad.ns?description=x", "namespace name contains forbidden characters"},
		{"/token/" + strings.Repeat("n", 256) + "?description=x", "the namespace name was too long"},
		{"/token/tns?description=x&pool=other", "the pool was not exists"},
	}
	for _, b := range bad {
		wantLmstfy(t, ts.adminDo(t, "POST", b.path, nil), 400, lmstfyErr(b.msg))
	}
	wantLmstfy(t, ts.adminDo(t, "GET", "/token/tns?pool=other", nil), 400, lmstfyErr("the pool was not exists"))
	wantLmstfy(t, ts.adminDo(t, "DELETE", "/token/tns/other:x", nil), 400, lmstfyErr("the pool was not exists"))
	// The admin listener keeps its own auth.
	if r := lmstfyDo(t, "GET", ts.AdminURL+"/token/tns", nil); r.Status != 401 {
		t.Fatalf("admin route without the admin token: %d %s", r.Status, r.Body)
	}
}

func TestLmstfyLimits(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	secret := ts.token(t, "lns")
	tok, err := ts.Tokens.Authenticate(ctxT(t), secret)
	if err != nil {
		t.Fatal(err)
	}
	path := "/token/lns/" + secret + "/limit"
	wantLmstfy(t, ts.adminDo(t, "GET", path, nil), 404, lmstfyNull)

	limit := map[string]int{"read": 10, "write": 5, "interval": 1}
	wantLmstfy(t, ts.adminDo(t, "POST", path, limit), 201, map[string]any{"limiter": limit})
	wantLmstfy(t, ts.adminDo(t, "POST", path, limit), 400, lmstfyErr("the token already has a limit (PUT replaces it)"))
	wantLmstfy(t, ts.adminDo(t, "GET", path, nil), 200, limit)
	// The token's id names it too.
	wantLmstfy(t, ts.adminDo(t, "GET", "/token/lns/"+tok.ID+"/limit", nil), 200, limit)

	limit = map[string]int{"read": 0, "write": 100, "interval": 60}
	wantLmstfy(t, ts.adminDo(t, "PUT", path, limit), 200, map[string]any{"limiter": limit})
	got, found, err := ts.srv.limits.Get(ctxT(t), tok.Namespace, tok.ID)
	if err != nil || !found || got != (tenant.Limit{Read: 0, Write: 100, Interval: 60}) {
		t.Fatalf("limits.get = %+v %v %v", got, found, err)
	}
	wantLmstfy(t, ts.adminDo(t, "GET", "/limits", nil), 200,
		[]map[string]any{{"namespace": "lns", "token": tok.ID, "limiter": limit}})

	wantLmstfy(t, ts.adminDo(t, "DELETE", path, nil), 200, map[string]string{"msg": "success"})
	wantLmstfy(t, ts.adminDo(t, "GET", path, nil), 404, lmstfyNull)
	wantLmstfy(t, ts.adminDo(t, "GET", "/limits?force_update=true", nil), 200, []any{})
	if _, found, _ := ts.srv.limits.Get(ctxT(t), tok.Namespace, tok.ID); found {
		t.Fatal("a deleted limit is still found")
	}

	bad := []struct {
		body any
		msg  string
	}{
		{map[string]int{"read": 1, "write": 1, "interval": 0}, "interval should be > 0"},
		{map[string]int{"read": 0, "write": 0, "interval": 1}, "the read and write of limiter can't be 0 at the same time"},
		{map[string]int{"read": -1, "write": 1, "interval": 1}, "read and write should be >= 0"},
	}
	for _, b := range bad {
		wantLmstfy(t, ts.adminDo(t, "POST", path, b.body), 400, lmstfyErr(b.msg))
	}
	if r := ts.adminDo(t, "PUT", path, "{not json"); r.Status != 400 || !strings.HasPrefix(lmstfyErrMsg(r), "invalid limiter") {
		t.Fatalf("bad JSON: %d %s", r.Status, r.Body)
	}
	wantLmstfy(t, ts.adminDo(t, "POST", "/token/lns/sk_nope/limit", limit), 404, lmstfyErr("token not found"))
	wantLmstfy(t, ts.adminDo(t, "GET", "/token/otherns/"+secret+"/limit", nil), 404, lmstfyNull)

	// Deleting the token drops its limit.
	wantLmstfy(t, ts.adminDo(t, "PUT", path, limit), 200, map[string]any{"limiter": limit})
	wantLmstfy(t, ts.adminDo(t, "DELETE", "/token/lns/"+secret, nil), 204, nil)
	wantLmstfy(t, ts.adminDo(t, "GET", "/limits", nil), 200, []any{})
}

func TestLmstfyPoolsInfoVersion(t *testing.T) {
	t.Parallel()
	e := newLmstfyEnv(t)
	e.publish(t, "q2", "", "x")
	e.publish(t, "q1", "", "x")
	wantLmstfy(t, e.ts.adminDo(t, "GET", "/pools", nil), 200, []string{"default"})
	wantLmstfy(t, e.ts.adminDo(t, "GET", "/pools?kind=redis_v2", nil), 200, []string{})
	wantLmstfy(t, e.ts.adminDo(t, "GET", "/pools?kind=nope", nil), 400, lmstfyErr("invalid kind"))
	wantLmstfy(t, e.ts.adminDo(t, "GET", "/info", nil), 200, map[string][]string{"lmns": {"q1", "q2"}})
	wantLmstfy(t, e.ts.adminDo(t, "GET", "/info?pool=x", nil), 400, lmstfyErr("the pool was not exists"))
	r := e.ts.adminDo(t, "GET", "/version", nil)
	var v map[string]string
	r.JSON(t, &v)
	if _, ok := v["build_commit"]; r.Status != 200 || v["version"] == "" || !ok {
		t.Fatalf("/version: %d %s", r.Status, r.Body)
	}
}

// lmstfy's admin route takes a chosen token (token=, in the query or a form), as lmstfy's does:
// deployments keep the tokens their clients have. It is stored hashed, works on both APIs at once,
// and creating it again answers lmstfy's 400.
func TestLmstfyChosenToken(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	const chosen = "01HZX3K7Q9V2B8N4M6P0R5T1WA"
	wantLmstfy(t, ts.adminDo(t, "POST", "/token/tns?description=from+lmstfy&token="+chosen, nil), 201,
		map[string]string{"token": chosen})
	// A form, and lmstfy's pool:token form (the answer names the pool, as lmstfy's does).
	form := "description=workers&token=" + url.QueryEscape("default:worker-token-chosen-by-ops-2023")
	r := lmstfyDo(t, "POST", ts.AdminURL+"/token/tns", []byte(form),
		"Content-Type", "application/x-www-form-urlencoded", "Authorization", "Bearer "+ts.AdminToken)
	wantLmstfy(t, r, 201, map[string]string{"token": "default:worker-token-chosen-by-ops-2023"})

	for _, secret := range []string{chosen, "worker-token-chosen-by-ops-2023", "default:worker-token-chosen-by-ops-2023"} {
		// The lmstfy API and the native API take it at once.
		if r := lmstfyDo(t, "PUT", ts.PublicURL+"/api/tns/q", []byte("x"), "X-Token", secret); r.Status != http.StatusCreated {
			t.Fatalf("lmstfy publish with chosen token %s: %d %s", secret, r.Status, r.Body)
		}
	}
	if r := ts.public(t, "POST", "/v1/ns/tns/consume", chosen, map[string]any{"queues": []string{"q"}}); r.Status != http.StatusOK {
		t.Fatalf("native consume with a chosen token: %d %s", r.Status, r.Body)
	}
	tok, err := ts.Tokens.Authenticate(ctxT(t), chosen)
	if err != nil || tok.Namespace != "tns" || tok.Description != "from lmstfy" || !slices.Equal(tok.Permissions, tenant.AllPermissions) {
		t.Fatalf("chosen token %+v %v", tok, err)
	}
	// GET lists it by id (only the hash is kept), as every token.
	var list struct{ Tokens map[string]string }
	ts.adminDo(t, "GET", "/token/tns", nil).JSON(t, &list)
	if list.Tokens[tok.ID] != "from lmstfy" || len(list.Tokens) != 2 {
		t.Fatalf("GET /token/tns = %v", list.Tokens)
	}
	for id := range list.Tokens {
		if strings.Contains(id, chosen) {
			t.Fatal("the list shows a secret")
		}
	}

	// The same token again, here or in another namespace: lmstfy's answer, nothing changes.
	for _, path := range []string{"/token/tns?description=again&token=" + chosen, "/token/other?description=again&token=" + chosen} {
		wantLmstfy(t, ts.adminDo(t, "POST", path, nil), 400, lmstfyErr("the token has already existed"))
	}
	if tok2, err := ts.Tokens.Authenticate(ctxT(t), chosen); err != nil || tok2.Description != "from lmstfy" {
		t.Fatalf("the token after a duplicate creation: %+v %v", tok2, err)
	}
	wantLmstfy(t, ts.adminDo(t, "GET", "/token/other", nil), 200, map[string]any{"tokens": map[string]string{}})
	// And it can be deleted by its secret, as lmstfy's tokens are.
	wantLmstfy(t, ts.adminDo(t, "DELETE", "/token/tns/"+chosen, nil), 204, nil)
	ts.waitOutTokenCache()
	if r := lmstfyDo(t, "PUT", ts.PublicURL+"/api/tns/q", []byte("x"), "X-Token", chosen); r.Status != http.StatusUnauthorized {
		t.Fatalf("the deleted chosen token: %d %s, want 401", r.Status, r.Body)
	}
}
