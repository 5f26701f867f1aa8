package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/sluicehq/sluice/cmd/sluice/internal/lmstfyimport"
	"github.com/sluicehq/sluice/internal/redisx"
	"github.com/sluicehq/sluice/server/tenant"
)

// importStep is one line of `sluice lmstfy import`'s report.
type importStep struct {
	// Kind is namespace, token or limit.
	Kind string `json:"kind"`
	// Name is the namespace, or "<namespace>/<redacted secret>" (secrets are never printed).
	Name string `json:"name"`
	// ID is the Sluice token id of a token or limit.
	ID string `json:"id,omitempty"`
	// Action: create, exists, set, unchanged (dry run: what --apply would do), skip or failed.
	Action string `json:"action"`
	Detail string `json:"detail,omitempty"`
}

// importReport is the whole answer of `sluice lmstfy import`, as --json prints it.
type importReport struct {
	Applied bool         `json:"applied"`
	Steps   []importStep `json:"steps"`
}

func runLmstfyImport(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "lmstfy import", "--from <redis-url> [--apply] [flags]", `
Carry an lmstfy deployment's namespaces, tokens and per-token rate limits over to a running Sluice
server, so lmstfy clients keep their tokens. It reads lmstfy's admin Redis (the admin_redis of
lmstfy's config; nothing there is changed) and, through Sluice's admin API, creates each
namespace and each token of lmstfy's default pool with the same secret (stored hashed, with
every permission of its namespace) and sets its limit.

Without --apply it only reports what it would do. It is idempotent: what already exists in Sluice
is left as it is, so running it again, or after a partial run, finishes the job. Tokens of other
lmstfy pools, and entries Sluice cannot take, are listed as skipped with the reason.

Examples:
  sluice lmstfy import --from redis://lmstfy-admin:6379/0
  sluice lmstfy import --from redis://:password@lmstfy-admin:6379/0 --apply`)
	af := addAdminFlags(fs, env)
	from := fs.String("from", "", "`URL` of lmstfy's admin Redis: redis://[:password@]host:port/db (also rediss://, redis+sentinel://)")
	prefix := fs.String("from-prefix", "", "key `prefix` of lmstfy's keys in that Redis (lmstfy writes none)")
	apply := fs.Bool("apply", false, "write to Sluice (default: a dry run that changes nothing)")
	if _, err := parseArgs(fs, args, 0, 0, "no arguments (use --from)"); err != nil {
		return err
	}
	if *from == "" {
		return usagef("--from is required: the URL of lmstfy's admin Redis")
	}
	rdb, err := redisx.NewClient(*from)
	if err != nil {
		return usagef("--from: %v", err)
	}
	defer rdb.Close()
	plan, err := lmstfyimport.Read(ctx, rdb, lmstfyimport.Config{Prefix: *prefix})
	if err != nil {
		return fmt.Errorf("read lmstfy's admin Redis: %w", err)
	}
	im := &importer{c: af.client(), apply: *apply}
	if err := im.run(ctx, plan); err != nil {
		return err
	}
	rep := importReport{Applied: *apply, Steps: im.steps}
	if af.json {
		return printValue(env.Stdout, rep)
	}
	printImport(env, rep)
	if n := im.failed(); n > 0 {
		return fmt.Errorf("%d step(s) failed (see above); run it again once fixed: what is done stays done", n)
	}
	return nil
}

// importer compares a plan with what the Sluice server has and, when apply is set, writes the
// difference through the admin API.
type importer struct {
	c     *apiClient
	apply bool
	steps []importStep
	// owner maps each Sluice token id to its namespace.
	owner map[string]string
}

func (im *importer) add(s importStep) { im.steps = append(im.steps, s) }

func (im *importer) failed() int {
	n := 0
	for _, s := range im.steps {
		if s.Action == "failed" {
			n++
		}
	}
	return n
}

func (im *importer) run(ctx context.Context, plan *lmstfyimport.Plan) error {
	nss, err := listAll[struct {
		Name string `json:"name"`
	}](ctx, im.c, "/v1/namespaces", "namespaces")
	if err != nil {
		return err
	}
	exists := map[string]bool{}
	im.owner = map[string]string{}
	for _, n := range nss {
		exists[n.Name] = true
		if err := im.loadTokens(ctx, n.Name); err != nil {
			return err
		}
	}
	for _, ns := range plan.Namespaces {
		im.namespace(ctx, ns, exists[ns])
	}
	for _, t := range plan.Tokens {
		im.token(ctx, t)
	}
	for _, s := range plan.Skipped {
		kind, name, _ := strings.Cut(s.What, " ")
		im.add(importStep{Kind: kind, Name: name, Action: "skip", Detail: s.Reason})
	}
	return nil
}

func (im *importer) loadTokens(ctx context.Context, ns string) error {
	list, err := listAll[struct {
		ID string `json:"id"`
	}](ctx, im.c, tokensPath(ns), "tokens")
	if err != nil {
		return err
	}
	for _, t := range list {
		im.owner[t.ID] = ns
	}
	return nil
}

func (im *importer) namespace(ctx context.Context, ns string, exists bool) {
	step := importStep{Kind: "namespace", Name: ns, Action: "exists"}
	if !exists {
		step.Action = "create"
		if im.apply {
			body := map[string]string{"name": ns, "description": "imported from lmstfy"}
			if _, err := im.c.call(ctx, http.MethodPost, "/v1/namespaces", nil, body); err != nil {
				step.Action, step.Detail = "failed", err.Error()
			}
		}
	}
	im.add(step)
}

func (im *importer) token(ctx context.Context, t lmstfyimport.Token) {
	id := tenant.IDOf(t.Secret)
	name := t.Namespace + "/" + t.Redacted()
	step := importStep{Kind: "token", Name: name, ID: id}
	switch owner, ok := im.owner[id]; {
	case ok && owner == t.Namespace:
		step.Action = "exists"
	case ok:
		im.add(importStep{Kind: "token", Name: name, ID: id, Action: "failed",
			Detail: "Sluice already has this secret as a token of namespace " + owner})
		return
	default:
		step.Action = "create"
		if im.apply {
			body := map[string]any{"secret": t.Secret, "description": t.Description}
			if _, err := im.c.call(ctx, http.MethodPost, tokensPath(t.Namespace), nil, body); err != nil {
				im.add(importStep{Kind: "token", Name: name, ID: id, Action: "failed", Detail: err.Error()})
				return
			}
			im.owner[id] = t.Namespace
		}
	}
	im.add(step)
	if t.Limit != nil {
		im.limit(ctx, t, name, id, step.Action == "create")
	}
}

func (im *importer) limit(ctx context.Context, t lmstfyimport.Token, name, id string, created bool) {
	want := *t.Limit
	step := importStep{Kind: "limit", Name: name, ID: id, Action: "set",
		Detail: fmt.Sprintf("read %d, write %d per %ds", want.Read, want.Write, want.Interval)}
	path := tokensPath(t.Namespace) + "/" + pathEscape(id) + "/limit"
	if !created || im.apply {
		var have lmstfyimport.Limit
		_, err := im.c.callJSON(ctx, http.MethodGet, path, nil, nil, &have)
		var ae *apiError
		switch {
		case err == nil && have == want:
			step.Action = "unchanged"
			im.add(step)
			return
		case err == nil:
			step.Detail += fmt.Sprintf(" (Sluice has read %d, write %d per %ds)", have.Read, have.Write, have.Interval)
		case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
		default:
			step.Action, step.Detail = "failed", err.Error()
			im.add(step)
			return
		}
	}
	if im.apply {
		if _, err := im.c.call(ctx, http.MethodPut, path, nil, want); err != nil {
			step.Action, step.Detail = "failed", step.Detail+": "+err.Error()
		}
	}
	im.add(step)
}

func printImport(env *Env, rep importReport) {
	if rep.Applied {
		fmt.Fprintln(env.Stdout, "lmstfy import (applied):")
	} else {
		fmt.Fprintln(env.Stdout, "lmstfy import (dry run: nothing was written; --apply writes what it shows):")
	}
	tw := newTable(env.Stdout, "KIND", "NAME", "ID", "ACTION", "DETAIL")
	count := map[string]int{}
	for _, s := range rep.Steps {
		tw.row(s.Kind, s.Name, s.ID, s.Action, s.Detail)
		count[s.Action]++
	}
	_ = tw.flush()
	var parts []string
	for _, a := range []string{"create", "set", "exists", "unchanged", "skip", "failed"} {
		if count[a] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", count[a], a))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "nothing to import")
	}
	fmt.Fprintln(env.Stdout, strings.Join(parts, ", "))
}
