// Package nginxtest runs a real nginx for tests: the gateways Sluice's deployment examples
// configure (deploy/nginx/waitroom.conf, deploy/nginx-permit.conf) are tested through the nginx
// users run, not a stand-in.
package nginxtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/testio"
)

// Run runs nginx (one process, in the foreground, stopped when tb ends) on a free loopback
// address. config gets that address and returns the body of nginx.conf's http block (%[1]s stands
// for nginx's directory) and other files to write there. Run returns the address once nginx
// listens on it, and nginx's pid. A missing nginx fails tb with the command that installs it.
func Run(tb testing.TB, connections int, config func(listen string) (httpBlock string, files map[string]string)) (string, int) {
	tb.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if _, statErr := os.Stat("/usr/sbin/nginx"); statErr != nil {
			tb.Fatal("nginx not found (install it: apt-get install -y nginx)")
		}
		bin = "/usr/sbin/nginx"
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	listen := ln.Addr().String()
	ln.Close()
	dir := tb.TempDir()
	httpBlock, files := config(listen)
	if files == nil {
		files = map[string]string{}
	}
	main := fmt.Sprintf(`daemon off;
master_process off;
pid %[1]s/nginx.pid;
error_log stderr warn;
events { worker_connections %[2]d; }
http {
    access_log off;
    client_body_temp_path %[1]s/body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    `+httpBlock+`
}
`, dir, connections)
	files["nginx.conf"] = main
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"))
	stderr := &testio.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		cancel()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c, err := net.Dial("tcp", listen)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("nginx not listening: %v; stderr: %s", err, stderr.String())
		}
	}
	return listen, cmd.Process.Pid
}
