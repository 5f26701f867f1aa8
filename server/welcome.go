package server

import (
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/sluicehq/sluice/server/tenant"
)

// defaultNamespace is the namespace embedded mode creates on its first start.
const defaultNamespace = "default"

// welcome runs in embedded mode once the listeners are bound: on the first start (no namespace yet) it creates the default
// namespace and a token with every permission, and prints the secret with copy-pasteable curl
// lines; on later starts it says how to make a new token (the secret is never shown again).
func (s *Server) welcome(ctx context.Context, publicAddr, adminAddr string) error {
	pub, adm := baseURL(publicAddr), baseURL(adminAddr)
	_, created, err := s.namespaces.Create(ctx, defaultNamespace, "created by the first start of the embedded mode")
	if err != nil {
		return err
	}
	where := "a managed redis-server with append-only persistence in " + s.cfg.DataDir
	if !s.embedded.managed {
		where = "an IN-PROCESS store (nothing survives a restart)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nSluice runs on its embedded Redis: %s.\n", where)
	if !created {
		curl, cli := s.tokenCommands(adm, defaultNamespace)
		fmt.Fprintf(&b, "Namespace %q exists; its tokens were shown when they were made. Make a new one with:\n\n", defaultNamespace)
		fmt.Fprintf(&b, "  %s\n  %s\n\n", curl, cli)
		_, err := fmt.Fprint(s.cfg.Out, b.String())
		return err
	}
	secret, _, err := s.tokens.Create(ctx, tenant.CreateTokenParams{Namespace: defaultNamespace, Description: "created on first start"})
	if err != nil {
		return err
	}
	fmt.Fprintf(&b, "Created namespace %q and a token with every permission (shown only this once):\n\n", defaultNamespace)
	fmt.Fprintf(&b, "  export SLUICE_TOKEN=%s\n\n", secret)
	fmt.Fprintf(&b, "Publish a job, consume it, then ack it (use the job_id the consume returned):\n\n")
	fmt.Fprintf(&b, "  curl -s -X POST %s/v1/ns/%s/queues/hello/jobs -H \"Authorization: Bearer $SLUICE_TOKEN\" -d '{\"payload\": {\"to\": \"ada\"}}'\n", pub, defaultNamespace)
	fmt.Fprintf(&b, "  curl -s -X POST %s/v1/ns/%s/consume -H \"Authorization: Bearer $SLUICE_TOKEN\" -d '{\"queues\": [\"hello\"], \"timeout\": 5}'\n", pub, defaultNamespace)
	fmt.Fprintf(&b, "  curl -s -X POST %s/v1/ns/%s/queues/hello/jobs/JOB_ID/ack -H \"Authorization: Bearer $SLUICE_TOKEN\" -d '{\"delivery\": 1}'\n\n", pub, defaultNamespace)
	fmt.Fprintf(&b, "Admin API (tokens, namespaces, /metrics): %s\n\n", adm)
	_, err = fmt.Fprint(s.cfg.Out, b.String())
	return err
}

// firstTokenHint runs on an external Redis once the listeners are bound: when the Redis holds no
// namespace yet (under this prefix), it logs how to make the first one and its token, the exact
// commands for this server's admin listener.
func (s *Server) firstTokenHint(ctx context.Context, adminAddr string) {
	n, err := s.namespaces.Count(ctx)
	if err != nil || n > 0 {
		return // a Redis that fails now is reported by the requests that need it
	}
	curl, cli := s.tokenCommands(baseURL(adminAddr), defaultNamespace)
	s.log.Info("no namespace yet: make the first one, with a token, on the admin listener",
		"command", curl, "cli", cli)
}

// tokenCommands are the curl line and the sluice command that make a token of namespace ns
// (and the namespace, when it is new) on the admin listener at adm.
func (s *Server) tokenCommands(adm, ns string) (curl, cli string) {
	auth := ""
	if s.cfg.AdminToken != "" {
		auth = ` -H "Authorization: Bearer $SLUICE_ADMIN_TOKEN"`
	}
	curl = fmt.Sprintf(`curl -s -X POST %s/v1/namespaces/%s/tokens%s -H 'Content-Type: application/json' -d '{"description": "my token"}'`, adm, ns, auth)
	cli = fmt.Sprintf("sluice token create --ns %s --admin-url %s", ns, adm)
	return curl, cli
}

// baseURL turns a listen address into a URL a local client can use.
func baseURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}
