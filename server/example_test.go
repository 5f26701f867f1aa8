package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"

	"github.com/sluicehq/sluice/server"
)

// A server on the in-process store (no Redis URL, no redis-server binary): an admin request makes
// a token, then a job is published and consumed with it.
func Example() {
	ctx := context.Background()
	srv, err := server.New(ctx, server.Config{
		RedisServerPath: "no-such-redis-server", // force the in-process store for the example
		Logger:          slog.New(slog.DiscardHandler),
		Out:             io.Discard,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	admin := httptest.NewServer(srv.AdminHandler())
	defer admin.Close()
	public := httptest.NewServer(srv.PublicHandler())
	defer public.Close()

	call := func(url, token, body string) (int, map[string]any) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewBufferString(body))
		req.Header.Set("Content-Type", "application/json") // the admin API takes JSON bodies only
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}

	_, tok := call(admin.URL+"/v1/namespaces/shop/tokens", "", `{"permissions": ["publish", "consume"]}`)
	token, _ := tok["token"].(string)
	status, _ := call(public.URL+"/v1/ns/shop/queues/emails/jobs", token, `{"payload": {"to": "ada"}}`)
	fmt.Println("publish:", status)
	_, got := call(public.URL+"/v1/ns/shop/consume", token, `{"queues": ["emails"]}`)
	job := got["jobs"].([]any)[0].(map[string]any)
	fmt.Println("consumed:", job["payload"], "delivery", job["delivery"])
	// Output:
	// publish: 201
	// consumed: map[to:ada] delivery 1
}
