package waitroom_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/waitroom"
)

// Concurrent read-change-write updates lose nobody's change: each adds one to max_active, and
// the room ends with every one of them added.
func TestUpdateRoomLosesNoConcurrentChange(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	a, b := newClient(t, env, waitroom.Config{}), newClient(t, env, waitroom.Config{})
	newRoom(t, a, waitroom.RoomConfig{MaxActive: 1, QueueTimeout: 45_000_000_000})
	const writers = 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		c := a
		if i%2 == 1 {
			c = b // two instances
		}
		wg.Go(func() {
			_, err := c.UpdateRoom(context.Background(), "r", func(cur waitroom.RoomUpdate) (waitroom.RoomUpdate, error) {
				cur.Config.MaxActive++
				return cur, nil
			})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := b.GetRoom(context.Background(), "r")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxActive != 1+writers || cfg.QueueTimeout.Seconds() != 45 {
		t.Fatalf("after %d increments: %+v", writers, cfg)
	}
}

// The applied record stays across SetRoom (a live replace) and is replaced only when an update
// says so; an update whose change fails writes nothing.
func TestUpdateRoomKeepsTheAppliedRecord(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, waitroom.Config{})
	ctx := context.Background()
	set := func(cur waitroom.RoomUpdate) (waitroom.RoomUpdate, error) {
		if cur.Found {
			t.Errorf("the room exists before its first write: %+v", cur)
		}
		return waitroom.RoomUpdate{Config: waitroom.RoomConfig{MaxActive: 3}, Applied: "file-1"}, nil
	}
	if _, err := c.UpdateRoom(ctx, "r", set); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetRoom(ctx, "r", waitroom.RoomConfig{MaxActive: 7}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	var seen waitroom.RoomUpdate
	_, err := c.UpdateRoom(ctx, "r", func(cur waitroom.RoomUpdate) (waitroom.RoomUpdate, error) {
		seen = cur
		cur.Config.MaxActive = 99
		return cur, boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("UpdateRoom = %v, want the change's error", err)
	}
	if !seen.Found || seen.Applied != "file-1" || seen.Config.MaxActive != 7 {
		t.Fatalf("update saw %+v, want the replaced settings and the record kept", seen)
	}
	if cfg, _ := c.GetRoom(ctx, "r"); cfg.MaxActive != 7 {
		t.Fatalf("a failed change wrote: %+v", cfg)
	}
}

// A room's own template naming a field the page's data has not is refused, with the field's name.
func TestRoomTemplateFieldsAreChecked(t *testing.T) {
	t.Parallel()
	env := redistest.New(t)
	c := newClient(t, env, waitroom.Config{})
	for _, tc := range []struct{ tmpl, field string }{
		{"<p>{{.Spot}}</p>", "Spot"},
		{"{{if .Position}}{{.Text.Titel}}{{end}}", "Text.Titel"},
		{"{{range .Script.Text}}{{$.Size}}{{end}}", "Size"},
		{"{{with .Text}}{{.Title}}{{end}}{{else}}", ""}, // does not parse
		{"{{.Position.Foo}}", "Position.Foo"},
	} {
		_, err := c.SetRoom(context.Background(), "r", waitroom.RoomConfig{MaxActive: 1, Template: tc.tmpl})
		var fe *sluice.FieldError
		if !errors.As(err, &fe) || fe.Field != "template" || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("template %q: %v, want a template error naming %q", tc.tmpl, err, tc.field)
		}
	}
	good := "{{.Text.Title}} {{.Position}}/{{.Length}} {{range $k, $v := .Script.Text}}{{$k}}={{$v}}{{end}} {{with .Script}}{{.Next}}{{end}} {{$.Lang}}"
	if _, err := c.SetRoom(context.Background(), "r", waitroom.RoomConfig{MaxActive: 1, Template: good}); err != nil {
		t.Fatalf("a good template refused: %v", err)
	}
}
