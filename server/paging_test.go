package server

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/queue"
)

// readPages follows next_cursor through a listing from path (with ?limit=), returning every
// item's name field in the order the pages gave them.
func readPages(t *testing.T, get func(path string) response, path, member, nameField string) []string {
	t.Helper()
	var all []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatalf("%s: more than 100 pages", path)
		}
		p := path
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		r := get(p)
		wantStatus(t, r, http.StatusOK, "")
		var body map[string]any
		r.JSON(t, &body)
		items, _ := body[member].([]any)
		for _, it := range items {
			all = append(all, it.(map[string]any)[nameField].(string))
		}
		next, _ := body["next_cursor"].(string)
		if next == "" {
			return all
		}
		cursor = next
	}
}

// wantNames fails the test unless names holds each of want once at least and nothing else.
func wantNames(t *testing.T, what string, names []string, want map[string]bool) {
	t.Helper()
	seen := map[string]bool{}
	for _, n := range names {
		if !want[n] {
			t.Fatalf("%s: %q is not one of the listing's", what, n)
		}
		seen[n] = true
	}
	if len(seen) != len(want) {
		t.Fatalf("%s: got %d distinct of %d", what, len(seen), len(want))
	}
}

// Queue, token and namespace listings come a page at a time with next_cursor, every entry in
// some page, and none of another namespace's.
func TestListingsPageWithACursor(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.token(t, "shop")
	ts.token(t, "other")
	queues := map[string]bool{}
	for i := range 300 {
		q := fmt.Sprintf("q%03d", i)
		queues[q] = true
		if _, err := ts.Queue.Publish(ctxT(t), queue.PublishParams{Namespace: "shop", Queue: q, Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ts.Queue.Publish(ctxT(t), queue.PublishParams{Namespace: "other", Queue: "theirs", Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	pub := func(p string) response { return ts.public(t, http.MethodGet, p, tok, nil) }
	adm := func(p string) response { return ts.adminDo(t, http.MethodGet, p, nil) }

	wantNames(t, "queues", readPages(t, pub, "/v1/ns/shop/queues?limit=50", "queues", "name"), queues)
	first := pub("/v1/ns/shop/queues?limit=50")
	var body struct {
		Queues     []map[string]any `json:"queues"`
		NextCursor *string          `json:"next_cursor"`
	}
	first.JSON(t, &body)
	if body.NextCursor == nil || len(body.Queues) >= 300 {
		t.Fatalf("a first page of 50 holds %d queues, next %v", len(body.Queues), body.NextCursor)
	}

	tokens := map[string]bool{}
	for range 25 {
		r := ts.adminDo(t, http.MethodPost, "/v1/namespaces/shop/tokens", map[string]any{})
		var created struct{ ID string }
		r.JSON(t, &created)
		tokens[created.ID] = true
	}
	list := ts.adminDo(t, http.MethodGet, "/v1/namespaces/shop/tokens?limit=1000", nil)
	var all struct{ Tokens []struct{ ID string } }
	list.JSON(t, &all)
	for _, x := range all.Tokens {
		tokens[x.ID] = true // the token made by ts.token
	}
	got := readPages(t, adm, "/v1/namespaces/shop/tokens?limit=7", "tokens", "id")
	if len(got) != len(tokens) {
		t.Fatalf("token pages gave %d, want %d (each once)", len(got), len(tokens))
	}
	wantNames(t, "tokens", got, tokens)

	nss := map[string]bool{"shop": true, "other": true}
	for i := range 200 {
		ns := fmt.Sprintf("ns%03d", i)
		nss[ns] = true
		wantStatus(t, ts.adminDo(t, http.MethodPost, "/v1/namespaces", map[string]string{"name": ns}), http.StatusCreated, "")
	}
	wantNames(t, "namespaces", readPages(t, adm, "/v1/namespaces?limit=20", "namespaces", "name"), nss)
}

// Forged cursors are refused with 400 naming "cursor": garbage, a cursor of another listing, and
// a cursor made for another namespace, which never lists that namespace's queues.
func TestForgedCursorsAreRefused(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	tok := ts.token(t, "shop")
	ts.token(t, "other")
	for i := range 200 {
		for _, ns := range []string{"shop", "other"} {
			if _, err := ts.Queue.Publish(ctxT(t), queue.PublishParams{Namespace: ns, Queue: fmt.Sprintf("%s-%03d", ns, i), Payload: []byte("x")}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A real cursor of "other"'s listing, as its own admin would get it.
	r := ts.adminDo(t, http.MethodGet, "/v1/namespaces/other/tokens?limit=1", nil)
	wantStatus(t, r, http.StatusOK, "")
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, c := range []string{
		"x", "%%%", enc("queues\x00other\x00" + "5"), enc("tokens\x00shop\x00" + "5"), enc("queues\x00shop"),
		enc("queues\x00shop\x00"), enc("queues\x00shop\x00-1"), enc("queues\x00shop\x00abc"), strings.Repeat("A", 5000),
	} {
		r := ts.public(t, http.MethodGet, "/v1/ns/shop/queues?cursor="+url.QueryEscape(c), tok, nil)
		wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
		if r.ErrorField() != "cursor" || strings.Contains(string(r.Body), "other-") {
			t.Fatalf("cursor %.40q: %s", c, r.Body)
		}
	}
	// A well-formed cursor of shop's own listing at any position lists shop's queues only.
	r = ts.public(t, http.MethodGet, "/v1/ns/shop/queues?cursor="+enc("queues\x00shop\x00"+"12345"), tok, nil)
	if r.Status == http.StatusOK && regexp.MustCompile(`"other-`).Match(r.Body) {
		t.Fatalf("a forged position listed another namespace's queues: %.300s", r.Body)
	}
	for _, c := range []string{"x", enc("tokens\x00other\x00" + "0000000000001:0123456789abcdef"), enc("tokens\x00shop\x00(")} {
		r := ts.adminDo(t, http.MethodGet, "/v1/namespaces/shop/tokens?cursor="+url.QueryEscape(c), nil)
		wantStatus(t, r, http.StatusBadRequest, "invalid_argument")
	}
	wantStatus(t, ts.adminDo(t, http.MethodGet, "/v1/namespaces?cursor=x", nil), http.StatusBadRequest, "invalid_argument")
	wantStatus(t, ts.adminDo(t, http.MethodGet, "/v1/namespaces?limit=0", nil), http.StatusBadRequest, "invalid_argument")
	// A namespace's token cannot list another namespace's queues, with or without a cursor.
	wantStatus(t, ts.public(t, http.MethodGet, "/v1/ns/other/queues", tok, nil), http.StatusForbidden, "permission_denied")
}

// The dashboard pages too: the overview shows the first queues of a namespace with a link to
// its page, which pages through all of them; the tokens page pages a namespace's tokens.
func TestDashboardPagesLargeNamespaces(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ts.token(t, "big")
	for i := range 250 {
		if _, err := ts.Queue.Publish(ctxT(t), queue.PublishParams{Namespace: "big", Queue: fmt.Sprintf("q%03d", i), Payload: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	for range 130 {
		ts.token(t, "big")
	}
	d := newDashboard(t, ts)
	d.login(t)
	wantPage(t, d.get(t, "/ui/"), http.StatusOK, `href="/ui/ns/big"`, "All 250 queues of big")
	rows := regexp.MustCompile(`<tr data-queue="(q\d+)"`)
	seen := map[string]bool{}
	next := "/ui/ns/big"
	for pages := 0; next != ""; pages++ {
		if pages > 20 {
			t.Fatal("more than 20 pages of queues")
		}
		r := d.get(t, next)
		wantStatus(t, r, http.StatusOK, "")
		for _, m := range rows.FindAllStringSubmatch(string(r.Body), -1) {
			seen[m[1]] = true
		}
		next = ""
		if m := regexp.MustCompile(`href="([^"]+)" rel="next"`).FindStringSubmatch(string(r.Body)); m != nil {
			next = strings.ReplaceAll(m[1], "&amp;", "&")
		}
	}
	if len(seen) != 250 {
		t.Fatalf("the namespace's pages showed %d of 250 queues", len(seen))
	}
	wantStatus(t, d.get(t, "/ui/api/ns/big"), http.StatusOK, "")
	wantPage(t, d.get(t, "/ui/tokens"), http.StatusOK, "All 131 tokens of big")
	r := d.get(t, "/ui/tokens?ns=big")
	if n := strings.Count(string(r.Body), "<tr data-token="); n != 100 || !strings.Contains(string(r.Body), `rel="next"`) {
		t.Fatalf("a page of big's tokens shows %d tokens (want 100 and a next page)", n)
	}
	wantStatus(t, d.get(t, "/ui/ns/big?cursor=forged"), http.StatusBadRequest, "")
}
