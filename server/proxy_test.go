package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/nginxtest"
	"github.com/sluicehq/sluice/internal/testkit/testio"
)

// selfSigned writes a certificate for 127.0.0.1 and its key into dir and returns their paths and
// a pool that trusts it.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sluice-admin.example.com"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"sluice-admin.example.com"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "admin.crt"), filepath.Join(dir, "admin.key")
	for file, block := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// clientFrom is an HTTP client whose connections come from the loopback address ip (Linux
// answers on all of 127.0.0.0/8), so one machine plays several clients.
func clientFrom(t *testing.T, ip string, pool *x509.CertPool) *http.Client {
	t.Helper()
	tr := &http.Transport{
		DialContext:     (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}).DialContext,
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, CheckRedirect: noRedirects.CheckRedirect}
}

// TestAdminBehindNginx runs deploy/nginx/admin.conf with a real nginx terminating TLS in front of
// the admin listener, the server trusting it as a proxy: the session cookie is Secure, each
// client behind the proxy has its own limit of failed authentications (and cannot dodge it by
// sending X-Forwarded-For itself), and the same headers from a client that is not the proxy
// change nothing.
func TestAdminBehindNginx(t *testing.T) {
	t.Parallel()
	log := &testio.Buffer{}
	ts := newTestServer(t, func(c *Config) {
		c.TrustedProxies = "127.0.0.2"
		c.Logger = slog.New(slog.NewTextHandler(log, nil))
	})
	example, err := os.ReadFile(filepath.Join("..", "deploy", "nginx", "admin.conf"))
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, pool := selfSigned(t, t.TempDir())
	listen, _ := nginxtest.Run(t, 64, func(listen string) (string, map[string]string) {
		conf := strings.NewReplacer(
			"server 127.0.0.1:7778;", "server "+strings.TrimPrefix(ts.AdminURL, "http://")+";",
			"listen 8443 ssl;", "listen "+listen+" ssl;",
			"/etc/nginx/tls/sluice-admin.crt", certFile,
			"/etc/nginx/tls/sluice-admin.key", keyFile,
		).Replace(string(example))
		if strings.Contains(conf, "/etc/nginx/tls/") || !strings.Contains(conf, listen) || strings.Contains(conf, ":7778;") {
			t.Fatal("the example config no longer has the addresses and paths the test replaces")
		}
		return "include %[1]s/admin.conf;", map[string]string{"admin.conf": conf}
	})
	site := "https://" + listen
	alice, bob := clientFrom(t, "127.0.0.3", pool), clientFrom(t, "127.0.0.4", pool)
	direct := clientFrom(t, "127.0.0.1", pool)

	// Logging in through the proxy over TLS gives a Secure cookie; the proxy's headers sent by a
	// client straight to the admin listener do not.
	r := sendWith(t, alice, http.MethodPost, site+"/ui/login", nil, url.Values{"token": {ts.AdminToken}})
	if r.Status != http.StatusSeeOther || !strings.Contains(r.Header.Get("Set-Cookie"), "; Secure") {
		t.Fatalf("login through nginx: %d Set-Cookie %q", r.Status, r.Header.Get("Set-Cookie"))
	}
	r = sendWith(t, direct, http.MethodPost, ts.AdminURL+"/ui/login", map[string]string{"X-Forwarded-Proto": "https"}, url.Values{"token": {ts.AdminToken}})
	if r.Status != http.StatusSeeOther || strings.Contains(r.Header.Get("Set-Cookie"), "Secure") {
		t.Fatalf("login straight to the listener with a forged X-Forwarded-Proto: %d Set-Cookie %q", r.Status, r.Header.Get("Set-Cookie"))
	}

	// Alice guesses through the proxy, inventing X-Forwarded-For addresses: her own address is
	// counted, and she waits after ten.
	guess := func(c *http.Client, base string, n int) response {
		return sendWith(t, c, http.MethodGet, base+"/v1/namespaces", map[string]string{
			"Authorization": "Bearer guess", "X-Forwarded-For": "198.51.100." + strings.Repeat("1", 1+n%3),
		}, nil)
	}
	for n := range 10 {
		wantStatus(t, guess(alice, site, n), http.StatusUnauthorized, "unauthenticated")
	}
	wantBackoff(t, guess(alice, site, 10))
	if !strings.Contains(log.String(), "client_addr=127.0.0.3 failures=11") {
		t.Fatalf("the log does not name the client behind the proxy:\n%s", log)
	}
	// Bob, behind the same proxy, has his own allowance.
	wantStatus(t, guess(bob, site, 0), http.StatusUnauthorized, "unauthenticated")
	// A client that is not the proxy cannot pick its address either.
	for n := range 10 {
		wantStatus(t, guess(direct, ts.AdminURL, n), http.StatusUnauthorized, "unauthenticated")
	}
	wantBackoff(t, guess(direct, ts.AdminURL, 10))
}
