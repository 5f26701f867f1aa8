package cli

import (
	"cmp"
	"context"
	"fmt"
	"net/http"

	"github.com/sluicehq/sluice/server"
)

func tokensPath(ns string) string { return "/v1/namespaces/" + pathEscape(ns) + "/tokens" }

func runTokenCreate(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "token create", "[flags]", `
Create a token for a namespace (the namespace is created when it is new) and print its secret.
The secret is shown only this once: the server keeps only its hash.

Examples:
  sluice token create --ns shop --description "checkout workers" --perm consume
  export SLUICE_TOKEN=$(sluice token create --ns shop --json | jq -r .token)`)
	af := addAdminFlags(fs, env)
	ns := fs.String("ns", cmp.Or(env.Getenv("SLUICE_NAMESPACE"), defaultNamespace), "`namespace` of the token (env SLUICE_NAMESPACE)")
	desc := fs.String("description", "", "what the token is for")
	var perms strList
	fs.Var(&perms, "perm", "`permission`: publish, consume, manage, tasks or tasks:delegate (repeatable or comma-separated; default all but tasks:delegate)")
	maxPriority := fs.Int("max-priority", -1, "cap the priority of jobs published and tasks submitted with the token (0..255; default: jobs no cap, tasks the server's relay_default_max_priority)")
	if _, err := parseArgs(fs, args, 0, 0, "no arguments (use --ns)"); err != nil {
		return err
	}
	body := map[string]any{}
	if *desc != "" {
		body["description"] = *desc
	}
	if len(perms) > 0 {
		body["permissions"] = perms
	}
	if *maxPriority >= 0 {
		body["max_priority"] = *maxPriority
	}
	var ans map[string]any
	if err := af.show(ctx, http.MethodPost, tokensPath(*ns), nil, body, &ans); err != nil || af.json {
		return err
	}
	f := flatten(ans)
	secret, _ := first(f, "secret", "token").(string)
	fmt.Fprintf(env.Stdout, "created token %s in namespace %s with permissions %s\n", text(f["id"]), *ns, text(f["permissions"]))
	fmt.Fprintf(env.Stdout, "secret (shown only this once):\n\n  export SLUICE_TOKEN=%s\n", secret)
	return nil
}

func runTokenRevoke(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "token revoke", "[flags] <token-id>", `
Revoke a token of a namespace, by the id token create printed (or by its secret). Requests with it
fail within a second on every server.

Example:
  sluice token revoke --ns shop 3f2a9c0d1e4b5a6f`)
	af := addAdminFlags(fs, env)
	ns := fs.String("ns", cmp.Or(env.Getenv("SLUICE_NAMESPACE"), defaultNamespace), "`namespace` of the token (env SLUICE_NAMESPACE)")
	pos, err := parseArgs(fs, args, 1, 1, "<token-id>")
	if err != nil {
		return err
	}
	if err := af.show(ctx, http.MethodDelete, tokensPath(*ns)+"/"+pathEscape(pos[0]), nil, nil, nil); err != nil || af.json {
		return err
	}
	fmt.Fprintf(env.Stdout, "revoked token %s of namespace %s\n", pos[0], *ns)
	return nil
}

func runTokenGen(_ context.Context, env *Env, args []string) error {
	fs := newFlags(env, "token gen", "", `
Print a strong random secret: 32 random bytes in base64url (43 characters). It is what
admin_token wants (the server refuses an admin token shorter than 24 characters or of low
variety), and it suits room_pass_keys and relay_permit_keys too. Nothing is sent anywhere.

Examples:
  export SLUICE_ADMIN_TOKEN=$(sluice token gen)
  sluice server --admin-token "$(sluice token gen)"`)
	if _, err := parseArgs(fs, args, 0, 0, "no arguments"); err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, server.NewAdminToken())
	return nil
}
