package waitroom_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"

	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/waitroom"
)

// A room with one slot: the first visitor gets in, the second waits at the head of the line and
// gets in as soon as the first one leaves.
func Example() {
	env, done := redistest.ForExample("waitroom-Example")
	defer done()
	ctx := context.Background()

	client, err := waitroom.NewClient(env.Client, waitroom.Config{
		Prefix:   env.Prefix,
		PassKeys: [][]byte{[]byte("a secret of at least 32 bytes...")},
	})
	if err != nil {
		panic(err)
	}
	if _, err := client.SetRoom(ctx, "checkout", waitroom.RoomConfig{MaxActive: 1}); err != nil {
		panic(err)
	}
	room, _ := client.Room("checkout")

	alice, _ := room.Arrive(ctx, "alice")
	bob, _ := room.Arrive(ctx, "bob")
	fmt.Println("alice:", alice.State, "bob:", bob.State, "at", bob.Position, "of", bob.Length)

	_, _ = room.Release(ctx, "alice")
	bob, _ = room.Arrive(ctx, "bob") // bob's next status poll
	fmt.Println("bob:", bob.State)
	// Output:
	// alice: admitted bob: waiting at 1 of 1
	// bob: admitted
}

// Middleware puts a room in front of any net/http handler: admitted visitors pass on a signed
// pass cookie (no Redis call per request), the others get the waiting page. A browser's first
// request only gets its visitor cookie (a flood that keeps no cookies never reaches the line);
// its next one, the waiting page's first poll, joins the line.
func ExampleMiddleware() {
	env, done := redistest.ForExample("waitroom-ExampleMiddleware")
	defer done()
	client, _ := waitroom.NewClient(env.Client, waitroom.Config{
		Prefix:   env.Prefix,
		PassKeys: [][]byte{[]byte("a secret of at least 32 bytes...")},
	})
	_, _ = client.SetRoom(context.Background(), "shop", waitroom.RoomConfig{MaxActive: 1})
	room, _ := client.Room("shop")

	shop := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "welcome to the shop") })
	srv := httptest.NewServer(waitroom.Middleware(room, shop))
	defer srv.Close()

	get := func(browser *http.Client) string {
		resp, err := browser.Get(srv.URL) //nolint:noctx // example
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return string(body)
		}
		return fmt.Sprintf("%d %s", resp.StatusCode, resp.Header.Get("Sluice-Room"))
	}
	for _, name := range []string{"first", "second"} {
		jar, _ := cookiejar.New(nil)
		browser := &http.Client{Jar: jar}
		first := get(browser)
		fmt.Printf("%s visitor: %s, then %s\n", name, first, get(browser))
	}
	// Output:
	// first visitor: 503 waiting, then welcome to the shop
	// second visitor: 503 waiting, then 503 waiting
}
