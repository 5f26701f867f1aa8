package ui

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/server/internal/httpapi"
	"github.com/sluicehq/sluice/server/tenant"
)

// tokenNS is a namespace with a page of its tokens.
type tokenNS struct {
	Name   string
	Tokens []tenant.Token
	// Total is how many tokens the namespace holds.
	Total int64
}

// More reports whether the namespace has tokens the block does not show.
func (b tokenNS) More() bool { return b.Total > int64(len(b.Tokens)) }

// The tokens page reads a page at a time: without ?ns= a page of namespaces with the first
// tokens of each, with ?ns= a page of that namespace's tokens.
const (
	tokensPerNamespace = 20  // tokens shown per namespace on a page of namespaces
	tokensPerPage      = 100 // tokens on a page of one namespace
)

// tokensData reads the tokens page (ids and settings, never secrets) and the link to its next
// page ("" on the last).
func (u *UI) tokensData(r *http.Request) ([]tokenNS, string, error) {
	ctx := r.Context()
	if ns := r.URL.Query().Get("ns"); ns != "" {
		if !tenant.ValidName(ns) {
			return nil, "", httpapi.InvalidArg("ns", "%q %s", ns, tenant.NameRule)
		}
		pr, err := httpapi.ReadPage(r, "ui-tokens", ns)
		if err != nil {
			return nil, "", err
		}
		b, next, err := u.tokenBlock(r, ns, pr.After, tokensPerPage)
		if err != nil {
			return nil, "", err
		}
		return []tokenNS{b}, pageLink("/ui/tokens", "ui-tokens", ns, next) + nsParam(next, ns), nil
	}
	pr, err := httpapi.ReadPage(r, "ui-token-namespaces", "")
	if err != nil {
		return nil, "", err
	}
	nss, next, err := u.cfg.Namespaces.Page(ctx, pr.After, overviewNamespaces)
	if err != nil {
		return nil, "", err
	}
	out := make([]tokenNS, 0, len(nss))
	for _, n := range nss {
		b, _, err := u.tokenBlock(r, n.Name, "", tokensPerNamespace)
		if err != nil {
			return nil, "", err
		}
		out = append(out, b)
	}
	return out, pageLink("/ui/tokens", "ui-token-namespaces", "", next), nil
}

// nsParam is the ns parameter a next-page link of namespace ns's tokens carries ("" when there
// is no next page).
func nsParam(next, ns string) string {
	if next == "" {
		return ""
	}
	return "&ns=" + url.QueryEscape(ns)
}

// tokenBlock reads a page of namespace ns's tokens and how many it holds.
func (u *UI) tokenBlock(r *http.Request, ns, after string, limit int) (tokenNS, string, error) {
	list, next, err := u.cfg.Tokens.Page(r.Context(), ns, after, limit)
	if err != nil {
		return tokenNS{}, "", err
	}
	total, err := u.cfg.Tokens.Count(r.Context(), ns)
	if err != nil {
		return tokenNS{}, "", err
	}
	return tokenNS{Name: ns, Tokens: list, Total: total}, next, nil
}

// permChoice is one permission's checkbox on the token form, ticked when a token created
// without a list would carry it.
type permChoice struct {
	Name    tenant.Permission
	Checked bool
}

func permChoices() []permChoice {
	out := make([]permChoice, len(tenant.KnownPermissions))
	for i, p := range tenant.KnownPermissions {
		out[i] = permChoice{Name: p, Checked: slices.Contains(tenant.AllPermissions, p)}
	}
	return out
}

func (u *UI) tokensPage(w http.ResponseWriter, r *http.Request) error {
	list, next, err := u.tokensData(r)
	if err != nil {
		return err
	}
	u.render(w, r, http.StatusOK, "tokens", "Tokens", map[string]any{
		"Namespaces": list, "Perms": permChoices(), "NS": r.URL.Query().Get("ns"), "Next": next,
		"Single": r.URL.Query().Get("ns") != "",
	})
	return nil
}

// createToken makes a token and shows its secret in the answer, the only time it is shown (the
// page is not a redirect, so the secret never lands in a URL or the history).
func (u *UI) createToken(w http.ResponseWriter, r *http.Request) error {
	ns := strings.TrimSpace(r.PostFormValue("namespace"))
	if ns == "" {
		return httpapi.InvalidArg("namespace", "name the namespace the token is for")
	}
	if err := r.ParseForm(); err != nil {
		return httpapi.InvalidArg("form", "%v", err)
	}
	perms := make([]tenant.Permission, 0, len(r.PostForm["perm"]))
	for _, p := range r.PostForm["perm"] {
		perms = append(perms, tenant.Permission(p))
	}
	if len(perms) == 0 {
		return httpapi.InvalidArg("permissions", "tick at least one of publish, consume, manage, tasks")
	}
	p := tenant.CreateTokenParams{Namespace: ns, Description: r.PostFormValue("description"), Permissions: perms}
	if mp := strings.TrimSpace(r.PostFormValue("max_priority")); mp != "" {
		n, err := strconv.Atoi(mp)
		if err != nil {
			return httpapi.InvalidArg("max_priority", "%q is not a whole number (leave it empty for no cap)", mp)
		}
		p.MaxPriority = &n
	}
	secret, tok, err := u.cfg.Tokens.Create(r.Context(), p)
	if err != nil {
		return err
	}
	list, next, err := u.tokensData(r)
	if err != nil {
		return err
	}
	u.render(w, r, http.StatusCreated, "tokens", "Tokens", map[string]any{
		"Namespaces": list, "Perms": permChoices(), "NS": ns, "Created": tok, "Secret": secret, "Next": next,
	})
	return nil
}

func (u *UI) revokeToken(w http.ResponseWriter, r *http.Request) error {
	ns, id := r.PathValue("ns"), r.PathValue("id")
	tok, err := u.cfg.Tokens.Find(r.Context(), ns, id)
	if err != nil {
		return err
	}
	back := "/ui/tokens?ns=" + url.QueryEscape(ns)
	if u.confirmFirst(w, r, confirmation{
		Crumbs:   []crumb{{"Tokens", "/ui/tokens"}, {ns, back}},
		Question: "Revoke token " + tok.ID + " of " + ns + "? Requests with it are refused at once, and dashboard sessions opened with it end.",
		Button:   "Revoke", Danger: true, Back: back,
	}) {
		return nil
	}
	if err := u.cfg.Tokens.Revoke(r.Context(), ns, tok.ID); err != nil {
		return err
	}
	if err := u.cfg.Limits.Remove(r.Context(), ns, tok.ID); err != nil {
		return err
	}
	return done(w, r, back, noteTokenRevoked, 0)
}
