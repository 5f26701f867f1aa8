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

type tokenNS struct {
	Name   string
	Tokens []tenant.Token
}

// tokensData lists every registered namespace with its tokens (ids and settings, never secrets).
func (u *UI) tokensData(r *http.Request) ([]tokenNS, error) {
	nss, err := u.cfg.Namespaces.List(r.Context())
	if err != nil {
		return nil, err
	}
	out := make([]tokenNS, 0, len(nss))
	for _, n := range nss {
		list, err := u.cfg.Tokens.List(r.Context(), n.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, tokenNS{Name: n.Name, Tokens: list})
	}
	return out, nil
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
	list, err := u.tokensData(r)
	if err != nil {
		return err
	}
	u.render(w, r, http.StatusOK, "tokens", "Tokens", map[string]any{
		"Namespaces": list, "Perms": permChoices(), "NS": r.URL.Query().Get("ns"),
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
	list, err := u.tokensData(r)
	if err != nil {
		return err
	}
	u.render(w, r, http.StatusCreated, "tokens", "Tokens", map[string]any{
		"Namespaces": list, "Perms": permChoices(), "NS": ns, "Created": tok, "Secret": secret,
	})
	return nil
}

func (u *UI) revokeToken(w http.ResponseWriter, r *http.Request) error {
	ns, id := r.PathValue("ns"), r.PathValue("id")
	tok, err := u.cfg.Tokens.Find(r.Context(), ns, id)
	if err != nil {
		return err
	}
	if err := u.cfg.Tokens.Revoke(r.Context(), ns, tok.ID); err != nil {
		return err
	}
	if err := u.cfg.Limits.Remove(r.Context(), ns, tok.ID); err != nil {
		return err
	}
	return done(w, r, "/ui/tokens?ns="+url.QueryEscape(ns), noteTokenRevoked, 0)
}
