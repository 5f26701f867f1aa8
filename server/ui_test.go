package server

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/queue"
	"github.com/sluicehq/sluice/relay"
	"github.com/sluicehq/sluice/server/tenant"
)

// dashboard is a browser-like client of the dashboard: a cookie jar, no redirects followed, and
// the CSRF token of the last page it read.
type dashboard struct {
	ts     *testServer
	client *http.Client
	csrf   string
}

func newDashboard(t *testing.T, ts *testServer) *dashboard {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &dashboard{ts: ts, client: &http.Client{Jar: jar, CheckRedirect: noRedirects.CheckRedirect}}
}

var csrfField = regexp.MustCompile(`name="csrf-token" content="([^"]+)"`)

func (d *dashboard) send(t *testing.T, method, path string, form url.Values, header map[string]string) response {
	t.Helper()
	r := sendWith(t, d.client, method, d.ts.AdminURL+path, header, form)
	if m := csrfField.FindSubmatch(r.Body); m != nil {
		d.csrf = string(m[1])
	}
	return r
}

func (d *dashboard) get(t *testing.T, path string) response {
	t.Helper()
	return d.send(t, http.MethodGet, path, nil, nil)
}

// post sends a form with the session's CSRF token.
func (d *dashboard) post(t *testing.T, path string, form url.Values) response {
	t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", d.csrf)
	return d.send(t, http.MethodPost, path, form, nil)
}

// login logs in with the admin token and loads the overview (for a CSRF token).
func (d *dashboard) login(t *testing.T) {
	t.Helper()
	r := d.send(t, http.MethodPost, "/ui/login", url.Values{"token": {d.ts.AdminToken}, "next": {"/ui/"}}, nil)
	if r.Status != http.StatusSeeOther || r.Header.Get("Location") != "/ui/" {
		t.Fatalf("login: %d %s", r.Status, r.Body)
	}
	page := d.get(t, "/ui/")
	wantPage(t, page, http.StatusOK, "Queues")
}

// wantPage fails unless the page has the status and contains every text.
func wantPage(t *testing.T, r response, status int, texts ...string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("got %d, want %d: %s", r.Status, status, r.Body)
	}
	for _, s := range texts {
		if !strings.Contains(string(r.Body), s) {
			t.Fatalf("page (%d) lacks %q:\n%s", r.Status, s, r.Body)
		}
	}
}

func wantRedirect(t *testing.T, r response, prefix string) {
	t.Helper()
	if r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Header.Get("Location"), prefix) {
		t.Fatalf("got %d Location %q, want 303 to %s...: %s", r.Status, r.Header.Get("Location"), prefix, r.Body)
	}
}

// deadJob publishes a job with one try and fails its delivery, so it lands in the dead letter.
func deadJob(t *testing.T, ts *testServer, ns, q, payload string) string {
	t.Helper()
	ctx := ctxT(t)
	res, err := ts.Queue.Publish(ctx, queue.PublishParams{Namespace: ns, Queue: q, Payload: []byte(payload), Tries: 1, Priority: queue.MaxPriority})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := ts.Queue.Consume(ctx, queue.ConsumeParams{Namespace: ns, Queues: []string{q}})
	if err != nil || len(ds) != 1 || ds[0].ID != res.ID {
		t.Fatalf("consume: %v %v", ds, err)
	}
	if _, err := ts.Queue.Nack(ctx, queue.NackParams{Namespace: ns, Queue: q, ID: res.ID, Delivery: ds[0].Delivery, Error: "boom: " + payload}); err != nil {
		t.Fatal(err)
	}
	return res.ID
}

func TestDashboardLogin(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	d := newDashboard(t, ts)

	// Without a session a page goes to the login page; JSON and actions are refused.
	wantRedirect(t, d.get(t, "/ui/"), "/ui/login?next=")
	wantStatus(t, d.get(t, "/ui/api/overview"), http.StatusUnauthorized, "unauthenticated")
	wantPage(t, d.send(t, http.MethodPost, "/ui/ns/a/queues/b/pause", url.Values{}, nil), http.StatusUnauthorized)
	wantPage(t, d.get(t, "/ui/login"), http.StatusOK, "Admin token")

	// A wrong token is refused and sets no cookie.
	r := d.send(t, http.MethodPost, "/ui/login", url.Values{"token": {"nope"}}, nil)
	wantPage(t, r, http.StatusUnauthorized, "That is not the admin token")
	if r.Header.Get("Set-Cookie") != "" {
		t.Fatalf("a failed login set a cookie: %s", r.Header.Get("Set-Cookie"))
	}
	// The bearer check of the admin API is not bypassed by the dashboard's paths.
	wantStatus(t, do(t, http.MethodGet, ts.AdminURL+"/v1/namespaces", "", nil), http.StatusUnauthorized, "unauthenticated")

	// A login from another site is refused.
	r = d.send(t, http.MethodPost, "/ui/login", url.Values{"token": {ts.AdminToken}}, map[string]string{"Origin": "http://evil.example"})
	wantPage(t, r, http.StatusForbidden)

	// The right token sets an HttpOnly, SameSite=Strict cookie and the session then serves pages;
	// the post-login redirect stays inside the dashboard.
	r = d.send(t, http.MethodPost, "/ui/login", url.Values{"token": {ts.AdminToken}, "next": {"//evil.example/"}}, nil)
	wantRedirect(t, r, "/ui/")
	if r.Header.Get("Location") != "/ui/" {
		t.Fatalf("next escaped the dashboard: %s", r.Header.Get("Location"))
	}
	c := r.Header.Get("Set-Cookie")
	for _, want := range []string{"sluice_ui=", "HttpOnly", "SameSite=Strict", "Path=/ui/", "Max-Age="} {
		if !strings.Contains(c, want) {
			t.Fatalf("cookie %q lacks %s", c, want)
		}
	}
	wantPage(t, d.get(t, "/ui/"), http.StatusOK, "Queues", "Nothing here yet")
	wantStatus(t, d.get(t, "/ui/api/overview"), http.StatusOK, "")

	// A forged cookie is no session.
	other := newDashboard(t, ts)
	u, _ := url.Parse(ts.AdminURL + "/ui/")
	other.client.Jar.SetCookies(u, []*http.Cookie{{Name: "sluice_ui", Value: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.AAAA", Path: "/ui/"}})
	wantRedirect(t, other.get(t, "/ui/"), "/ui/login")

	// Logging out ends the session in the browser.
	wantRedirect(t, d.post(t, "/ui/logout", nil), "/ui/login")
	wantRedirect(t, d.get(t, "/ui/"), "/ui/login")
}

func TestDashboardWithoutAdminToken(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) { c.AdminToken = "" })
	d := newDashboard(t, ts)
	// No login: the first page view gets a session, and actions still need its CSRF token.
	wantPage(t, d.get(t, "/ui/"), http.StatusOK, "Queues")
	wantRedirect(t, d.get(t, "/ui/login"), "/ui/")
	if _, err := ts.Queue.Publish(ctxT(t), queue.PublishParams{Namespace: "ns", Queue: "q", Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	wantPage(t, d.send(t, http.MethodPost, "/ui/ns/ns/queues/q/pause", url.Values{}, nil), http.StatusForbidden, "CSRF")
	wantRedirect(t, d.post(t, "/ui/ns/ns/queues/q/pause", nil), "/ui/ns/ns/queues/q?note=")
}

func TestDashboardCSRF(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	if _, err := ts.Queue.Publish(ctxT(t), queue.PublishParams{Namespace: "ns", Queue: "q", Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	d := newDashboard(t, ts)
	d.login(t)
	paused := func() bool {
		st, err := ts.Queue.Stats(ctxT(t), "ns", "q")
		if err != nil {
			t.Fatal(err)
		}
		return st.Paused
	}
	// No token, a wrong token, a token of another session, a foreign Origin: all refused.
	wantPage(t, d.send(t, http.MethodPost, "/ui/ns/ns/queues/q/pause", url.Values{}, nil), http.StatusForbidden, "CSRF")
	wantPage(t, d.send(t, http.MethodPost, "/ui/ns/ns/queues/q/pause", url.Values{"csrf": {"wrong"}}, nil), http.StatusForbidden)
	d2 := newDashboard(t, ts)
	d2.login(t)
	wantPage(t, d.send(t, http.MethodPost, "/ui/ns/ns/queues/q/pause", url.Values{"csrf": {d2.csrf}}, nil), http.StatusForbidden)
	wantPage(t, d.send(t, http.MethodPost, "/ui/ns/ns/queues/q/pause", url.Values{"csrf": {d.csrf}}, map[string]string{"Origin": "http://evil.example"}), http.StatusForbidden)
	// A GET cannot change anything.
	wantPage(t, d.get(t, "/ui/ns/ns/queues/q/pause"), http.StatusMethodNotAllowed)
	if paused() {
		t.Fatal("a refused request paused the queue")
	}
	wantRedirect(t, d.post(t, "/ui/ns/ns/queues/q/pause", nil), "/ui/ns/ns/queues/q?note=")
	if !paused() {
		t.Fatal("pause with the CSRF token did not pause")
	}
}

func TestDashboardQueues(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) { c.UISampleInterval = 20 * time.Millisecond })
	ctx := ctxT(t)
	tok := ts.token(t, "shop")
	for _, p := range []string{`{"n":1}`, `{"n":2}`, `{"n":3}`} {
		wantStatus(t, ts.public(t, "POST", "/v1/ns/shop/queues/mail/jobs", tok, `{"payload":`+p+`}`), http.StatusCreated, "")
	}
	bin, err := ts.Queue.Publish(ctx, queue.PublishParams{Namespace: "shop", Queue: "mail", Payload: []byte{0, 1, 2, 0xff}, Delay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	dead1 := deadJob(t, ts, "shop", "mail", "first")
	dead2 := deadJob(t, ts, "shop", "mail", "second")
	d := newDashboard(t, ts)
	d.login(t)

	// Overview: the namespace, the queue and its numbers, in the page and in its JSON twin.
	wantPage(t, d.get(t, "/ui/"), http.StatusOK, "shop", `href="/ui/ns/shop/queues/mail"`,
		`data-live="shop/mail:ready">3<`, `data-live="shop/mail:delayed">1<`, `data-live="shop/mail:dead">2<`, "<polyline")
	var l map[string]string
	r := d.get(t, "/ui/api/overview")
	r.JSON(t, &l)
	if l["shop/mail:ready"] != "3" || l["shop/mail:dead"] != "2" || l["shop/mail:paused"] != "running" {
		t.Fatalf("overview JSON: %v", l)
	}

	// The server's sampler records the queue's counters for the throughput chart.
	testwait.Until(t, time.Minute, "a throughput sample", func() bool {
		n, err := ts.env.Client.HLen(ctx, ts.env.Prefix+":ui:throughput:{shop:mail}").Result()
		return err == nil && n > 0
	})

	// Queue page: the ready tab first, a job by id (JSON and hex payloads), the find form.
	wantPage(t, d.get(t, "/ui/ns/shop/queues/mail"), http.StatusOK, `id="tab-ready" aria-current="page">Ready <span class="count" data-live="shop/mail:ready">3<`,
		`id="tab-scheduled" >Scheduled <span class="count">1<`, `{&#34;n&#34;:1}`)
	wantPage(t, d.get(t, "/ui/ns/shop/queues/mail?state=scheduled"), http.StatusOK, "binary: 00 01 02 ff")
	wantPage(t, d.get(t, "/ui/ns/shop/queues/mail?state=gone"), http.StatusBadRequest, "state")
	wantPage(t, d.get(t, "/ui/ns/shop/queues/nope"), http.StatusNotFound, "no queue")
	wantPage(t, d.get(t, "/ui/ns/shop/queues/mail/jobs/"+bin.ID), http.StatusOK, "delayed", "hex", "00 01 02 ff")
	wantPage(t, d.get(t, "/ui/ns/shop/queues/mail/jobs/"+dead1), http.StatusOK, "dead", "boom: first")
	wantPage(t, d.get(t, "/ui/ns/shop/queues/mail/jobs/nope"), http.StatusNotFound)
	wantRedirect(t, d.get(t, "/ui/find?ns=shop&q=mail&id="+dead1), "/ui/ns/shop/queues/mail/jobs/"+dead1)
	wantPage(t, d.get(t, "/ui/find?ns=shop&q=mail&id="), http.StatusBadRequest, "id")

	// Pause and resume.
	wantRedirect(t, d.post(t, "/ui/ns/shop/queues/mail/pause", nil), "/ui/ns/shop/queues/mail?note=")
	wantPage(t, d.get(t, "/ui/ns/shop/queues/mail"), http.StatusOK, `id="resume"`, ">paused<")
	wantRedirect(t, d.post(t, "/ui/ns/shop/queues/mail/resume", nil), "/ui/ns/shop/queues/mail?note=")
	wantPage(t, d.get(t, "/ui/ns/shop/queues/mail"), http.StatusOK, `id="pause"`)

	// Dead letter: listed with the last error; respawn one selected, delete the other.
	wantRedirect(t, d.get(t, "/ui/ns/shop/queues/mail/dead"), "/ui/ns/shop/queues/mail?state=dead")
	wantPage(t, d.get(t, "/ui/ns/shop/queues/mail?state=dead"), http.StatusOK, `data-live="shop/mail:dead">2<`, "boom: first", "boom: second")
	wantPage(t, d.post(t, "/ui/ns/shop/queues/mail/dead/respawn", nil), http.StatusBadRequest, "select at least one")
	wantPage(t, d.post(t, "/ui/ns/shop/queues/mail/dead/respawn", url.Values{"id": {dead1}}), http.StatusOK, "Respawn 1 dead jobs of mail?", dead1)
	wantRedirect(t, d.post(t, "/ui/ns/shop/queues/mail/dead/respawn", url.Values{"id": {dead1}, "confirm": {"yes"}}), "/ui/ns/shop/queues/mail?state=dead&n=1&note=respawned")
	if j, err := ts.Queue.Get(ctx, "shop", "mail", dead1); err != nil || j.State != queue.StateReady {
		t.Fatalf("respawned job: %+v %v", j, err)
	}
	wantRedirect(t, d.post(t, "/ui/ns/shop/queues/mail/dead/delete", url.Values{"id": {dead2}, "confirm": {"yes"}}), "/ui/ns/shop/queues/mail?state=dead&n=1&note=dead_deleted")
	wantPage(t, d.get(t, "/ui/ns/shop/queues/mail?state=dead"), http.StatusOK, "The dead letter is empty")

	// All of them at once.
	for i := range 3 {
		deadJob(t, ts, "shop", "other", "x"+string(rune('a'+i)))
	}
	// All of them, after a confirmation page that says how many: nothing happens before it.
	wantPage(t, d.post(t, "/ui/ns/shop/queues/other/dead/respawn", url.Values{"all": {"1"}}), http.StatusOK, "Respawn all 3 dead jobs of other", `id="confirm-action"`)
	if n, err := ts.Queue.DeadSize(ctx, "shop", "other"); err != nil || n != 3 {
		t.Fatalf("dead size before the confirmation: %d %v", n, err)
	}
	wantRedirect(t, d.post(t, "/ui/ns/shop/queues/other/dead/respawn", url.Values{"all": {"1"}, "confirm": {"yes"}}), "/ui/ns/shop/queues/other?state=dead&n=3&note=respawned")
	for i := range 2 {
		deadJob(t, ts, "shop", "third", "y"+string(rune('a'+i)))
	}
	wantPage(t, d.post(t, "/ui/ns/shop/queues/third/dead/delete", url.Values{"all": {"1"}}), http.StatusOK, "Delete all 2 dead jobs of third", "cannot be undone")
	wantRedirect(t, d.post(t, "/ui/ns/shop/queues/third/dead/delete", url.Values{"all": {"1"}, "confirm": {"yes"}}), "/ui/ns/shop/queues/third?state=dead&n=2&note=dead_deleted")
	if n, err := ts.Queue.DeadSize(ctx, "shop", "third"); err != nil || n != 0 {
		t.Fatalf("dead size after delete all: %d %v", n, err)
	}

	// Purge needs the queue's name typed in.
	wantPage(t, d.post(t, "/ui/ns/shop/queues/mail/purge", nil), http.StatusBadRequest, "confirm")
	wantPage(t, d.post(t, "/ui/ns/shop/queues/mail/purge", url.Values{"confirm": {"other"}}), http.StatusBadRequest, "confirm")
	wantRedirect(t, d.post(t, "/ui/ns/shop/queues/mail/purge", url.Values{"confirm": {"mail"}}), "/ui/ns/shop/queues/mail?n=5&note=purged")
	if st, err := ts.Queue.Stats(ctx, "shop", "mail"); err != nil || st.Ready+st.Delayed != 0 {
		t.Fatalf("after purge: %+v %v", st, err)
	}
	wantPage(t, d.get(t, "/ui/ns/shop/queues/mail"), http.StatusOK, "No ready jobs")
}

func TestDashboardTokens(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	d := newDashboard(t, ts)
	d.login(t)
	wantPage(t, d.get(t, "/ui/tokens"), http.StatusOK, "Create a token", "No namespaces yet")
	wantPage(t, d.post(t, "/ui/tokens", url.Values{"namespace": {"shop"}}), http.StatusBadRequest, "permissions")
	wantPage(t, d.post(t, "/ui/tokens", url.Values{"namespace": {"shop"}, "perm": {"publish"}, "max_priority": {"x"}}), http.StatusBadRequest, "max_priority")
	wantPage(t, d.post(t, "/ui/tokens", url.Values{"namespace": {"shop"}, "perm": {"fly"}}), http.StatusBadRequest)
	wantPage(t, d.post(t, "/ui/tokens", url.Values{"namespace": {"bad name"}, "perm": {"publish"}}), http.StatusBadRequest, "namespace")

	r := d.post(t, "/ui/tokens", url.Values{"namespace": {"shop"}, "description": {"mailer"}, "perm": {"publish"}, "max_priority": {"9"}})
	wantPage(t, r, http.StatusCreated, "shown <b>only once</b>", "mailer")
	secret := regexp.MustCompile(`id="token-secret" readonly value="([^"]+)"`).FindStringSubmatch(string(r.Body))
	if secret == nil {
		t.Fatalf("no secret in %s", r.Body)
	}
	tok, err := ts.Tokens.Authenticate(ctxT(t), secret[1])
	if err != nil || tok.Namespace != "shop" || tok.MaxPriority != 9 || len(tok.Permissions) != 1 || tok.Permissions[0] != tenant.PermPublish {
		t.Fatalf("created token: %+v %v", tok, err)
	}
	// The list shows the token, never its secret again.
	page := d.get(t, "/ui/tokens")
	wantPage(t, page, http.StatusOK, tok.ID, "mailer")
	if strings.Contains(string(page.Body), secret[1]) {
		t.Fatal("the token list shows the secret")
	}
	wantPage(t, d.post(t, "/ui/tokens/shop/"+tok.ID+"/revoke", nil), http.StatusOK, "Revoke token "+tok.ID+" of shop?")
	if _, err := ts.Tokens.Authenticate(ctxT(t), secret[1]); err != nil {
		t.Fatalf("the token was revoked before the confirmation: %v", err)
	}
	wantRedirect(t, d.post(t, "/ui/tokens/shop/"+tok.ID+"/revoke", url.Values{"confirm": {"yes"}}), "/ui/tokens?ns=shop&note=token_revoked")
	if _, err := ts.Tokens.Authenticate(ctxT(t), secret[1]); err == nil {
		t.Fatal("the revoked token still authenticates")
	}
	wantPage(t, d.post(t, "/ui/tokens/shop/"+tok.ID+"/revoke", nil), http.StatusNotFound)
}

func TestDashboardRooms(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	d := newDashboard(t, ts)
	d.login(t)
	wantPage(t, d.get(t, "/ui/rooms"), http.StatusOK, "No waiting rooms yet")
	room := roomWithLine(t, ts, "")
	wantPage(t, d.get(t, "/ui/rooms"), http.StatusOK, `data-live="room/sale:active">1<`, `data-live="room/sale:waiting">2<`, `data-live="room/sale:eta">`)
	var l map[string]string
	d.get(t, "/ui/api/rooms").JSON(t, &l)
	if l["room/sale:max"] != "1" {
		t.Fatalf("rooms JSON: %v", l)
	}
	wantPage(t, d.post(t, "/ui/rooms/sale/capacity", url.Values{"max_active": {"0"}}), http.StatusBadRequest, "max_active")
	wantPage(t, d.post(t, "/ui/rooms/nope/capacity", url.Values{"max_active": {"3"}}), http.StatusNotFound)
	wantRedirect(t, d.post(t, "/ui/rooms/sale/capacity", url.Values{"max_active": {"5"}}), "/ui/rooms?n=5&note=room_capacity")
	if cfg, err := ts.srv.waitroom.GetRoom(ctxT(t), "sale"); err != nil || cfg.MaxActive != 5 {
		t.Fatalf("capacity: %+v %v", cfg, err)
	}
	wantPage(t, d.post(t, "/ui/rooms/sale/reset", nil), http.StatusBadRequest, "confirm")
	wantRedirect(t, d.post(t, "/ui/rooms/sale/reset", url.Values{"confirm": {"sale"}}), "/ui/rooms?note=")
	st, err := room.Stats(ctxT(t))
	if err != nil || st.Active != 0 || st.Waiting != 0 {
		t.Fatalf("after reset: %+v %v", st, err)
	}
}

func TestDashboardRequestQueue(t *testing.T) {
	t.Parallel()
	// No dispatcher: the submitted task stays queued, so the page's counts can be checked.
	ts := newTestServer(t, func(c *Config) { c.RelayWorkers = -1 })
	d := newDashboard(t, ts)
	d.login(t)
	wantPage(t, d.get(t, "/ui/endpoints"), http.StatusOK, "No endpoints yet")
	wantPage(t, d.get(t, "/ui/tasks"), http.StatusOK, "Enter a task id")
	rc := ts.srv.relay
	if _, err := rc.SetEndpoint(ctxT(t), relay.Endpoint{Name: "slow", TargetURL: "http://127.0.0.1:1/api", QPS: 2, Concurrency: 1}); err != nil {
		t.Fatal(err)
	}
	sub, err := rc.Submit(ctxT(t), relay.SubmitParams{Endpoint: "slow", Namespace: "shop", Method: "POST", TargetURL: "http://127.0.0.1:1/api/x"})
	if err != nil {
		t.Fatal(err)
	}
	wantPage(t, d.get(t, "/ui/endpoints"), http.StatusOK, `data-live="ep/slow:queued">1<`, "http://127.0.0.1:1/api")
	var l map[string]string
	d.get(t, "/ui/api/endpoints").JSON(t, &l)
	if l["ep/slow:queued"] != "1" {
		t.Fatalf("endpoints JSON: %v", l)
	}
	limits := url.Values{"qps": {"5"}, "concurrency": {"3"}, "max_queued": {"100"}, "timeout": {"7"}}
	bad := url.Values{"qps": {"-1"}, "concurrency": {"3"}, "max_queued": {"100"}, "timeout": {"7"}}
	wantPage(t, d.post(t, "/ui/endpoints/slow", bad), http.StatusBadRequest, "qps")
	wantPage(t, d.post(t, "/ui/endpoints/nope", limits), http.StatusNotFound)
	wantRedirect(t, d.post(t, "/ui/endpoints/slow", limits), "/ui/endpoints?note=")
	ep, err := rc.Endpoint(ctxT(t), "slow")
	if err != nil || ep.QPS != 5 || ep.Concurrency != 3 || ep.MaxQueued != 100 || ep.Timeout != 7*time.Second || ep.TargetURL != "http://127.0.0.1:1/api" {
		t.Fatalf("endpoint after edit: %+v %v", ep, err)
	}
	wantPage(t, d.get(t, "/ui/tasks?id="+url.QueryEscape(sub.ID)), http.StatusOK, sub.ID, "pending", "POST http://127.0.0.1:1/api/x")
	wantPage(t, d.get(t, "/ui/tasks?id=slow-nope"), http.StatusNotFound)
}

// Sessions live in Redis: logging out ends the session on every instance at once, so a saved
// cookie replayed afterwards gets the login page (on the other instance too) and its old CSRF
// token performs nothing; "log out everywhere", in the dashboard or on the admin API, ends every
// session; a server with another admin
// token (a rotation) accepts none made under the old one.
func TestDashboardSessionsEnd(t *testing.T) {
	t.Parallel()
	a := newTestServer(t)
	b := newTestServerOn(t, a.env)
	if _, err := a.Queue.Publish(ctxT(t), queue.PublishParams{Namespace: "ns", Queue: "q", Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	d := newDashboard(t, a)
	d.login(t)
	onB := &dashboard{ts: b, client: d.client, csrf: d.csrf} // the same browser, the other instance
	wantPage(t, onB.get(t, "/ui/"), http.StatusOK, "Queues", `id="logout-everywhere"`)
	u, _ := url.Parse(a.AdminURL + "/ui/")
	saved := d.client.Jar.Cookies(u)
	oldCSRF := d.csrf

	wantRedirect(t, d.post(t, "/ui/logout", nil), "/ui/login?note=logged_out")
	wantPage(t, d.get(t, "/ui/login?note=logged_out"), http.StatusOK, "Logged out.")
	d.client.Jar.SetCookies(u, saved) // the attacker's copy of the cookie
	for _, dash := range []*dashboard{d, onB} {
		wantRedirect(t, dash.get(t, "/ui/"), "/ui/login")
		wantStatus(t, dash.get(t, "/ui/api/overview"), http.StatusUnauthorized, "unauthenticated")
		r := dash.send(t, http.MethodPost, "/ui/ns/ns/queues/q/pause", url.Values{"csrf": {oldCSRF}}, nil)
		wantPage(t, r, http.StatusUnauthorized, "log in")
	}
	if st, err := a.Queue.Stats(ctxT(t), "ns", "q"); err != nil || st.Paused {
		t.Fatalf("a replayed cookie paused the queue: %+v %v", st, err)
	}

	// Log out everywhere ends the other browsers' sessions too, on every instance.
	d1, d2 := newDashboard(t, a), newDashboard(t, b)
	d1.login(t)
	d2.login(t)
	wantRedirect(t, d1.post(t, "/ui/logout-everywhere", nil), "/ui/login?note=logged_out_everywhere")
	wantRedirect(t, d2.get(t, "/ui/"), "/ui/login")
	wantRedirect(t, d1.get(t, "/ui/"), "/ui/login")
	d3 := newDashboard(t, b)
	d3.login(t) // a new login works at once

	// The admin API's log out everywhere (no browser at hand): a namespace token cannot, the
	// admin token ends d3's session, made on the other instance.
	wantStatus(t, a.adminDo(t, http.MethodDelete, "/v1/dashboard/sessions", nil), http.StatusNoContent, "")
	wantRedirect(t, d3.get(t, "/ui/"), "/ui/login")
	wantStatus(t, do(t, http.MethodDelete, a.AdminURL+"/v1/dashboard/sessions", a.token(t, "ns"), nil), http.StatusUnauthorized, "")
	d3.login(t)

	// A server with a new admin token (a rotation) refuses the sessions of the old one.
	rotated := newTestServerOn(t, a.env, func(c *Config) { c.AdminToken = "rotated-admin-token-7d31e09c" })
	wantPage(t, (&dashboard{ts: b, client: d3.client}).get(t, "/ui/"), http.StatusOK, "Queues")
	wantRedirect(t, (&dashboard{ts: rotated, client: d3.client}).get(t, "/ui/"), "/ui/login")
}

// The session cookie is Secure when the browser's request came over https: here through a
// trusted proxy saying so in X-Forwarded-Proto. The same header from anyone else changes nothing.
func TestDashboardSecureCookie(t *testing.T) {
	t.Parallel()
	login := func(ts *testServer, header map[string]string) string {
		r := newDashboard(t, ts).send(t, http.MethodPost, "/ui/login", url.Values{"token": {ts.AdminToken}}, header)
		wantRedirect(t, r, "/ui/")
		return r.Header.Get("Set-Cookie")
	}
	https := map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.9"}
	trusting := newTestServer(t, func(c *Config) { c.TrustedProxies = "127.0.0.1" })
	if c := login(trusting, https); !strings.Contains(c, "; Secure") {
		t.Fatalf("behind a trusted proxy saying https the cookie is not Secure: %s", c)
	}
	if c := login(trusting, map[string]string{"X-Forwarded-Proto": "http"}); strings.Contains(c, "Secure") {
		t.Fatalf("a trusted proxy saying http got a Secure cookie: %s", c)
	}
	if c := login(newTestServer(t), https); strings.Contains(c, "Secure") {
		t.Fatalf("an untrusted X-Forwarded-Proto made the cookie Secure: %s", c)
	}
}

// A banner (?note=) shows only the server's own texts: an unknown code, or a count that is not a
// number, shows none, so a link cannot put words on a dashboard page.
func TestDashboardBannersOnlyFromCodes(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	d := newDashboard(t, ts)
	d.login(t)
	wantPage(t, d.get(t, "/ui/?note=purged&n=5"), http.StatusOK, `<p class="note" role="status">Purged 5 jobs.</p>`)
	for _, q := range []string{
		"note=Your+session+expired%3A+call+555-0100",
		"note=%3Cscript%3Ealert(1)%3C%2Fscript%3E",
		"note=purged&n=five",
		"note=purged",
		"note=Purged+5+jobs.",
	} {
		r := d.get(t, "/ui/?"+q)
		wantPage(t, r, http.StatusOK, "Queues")
		if strings.Contains(string(r.Body), `class="note"`) {
			t.Fatalf("?%s shows a banner:\n%s", q, r.Body)
		}
	}
}
