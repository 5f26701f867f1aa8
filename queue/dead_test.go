package queue_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/redistest"
	"github.com/sluicehq/sluice/queue"
)

// killJobs publishes n jobs with one try each and nacks them into the dead letter, oldest first.
func (f *fixture) killJobs(t *testing.T, q string, n int) []string {
	t.Helper()
	var ids []string
	for range n {
		id := f.publish(t, queue.PublishParams{Queue: q, Tries: 1, TTL: time.Hour})
		d := f.consumeOne(t, q)
		if out, err := f.client.Nack(ctxT(t), queue.NackParams{Namespace: f.ns, Queue: q, ID: d.ID, Delivery: d.Delivery, Error: "e"}); err != nil || out != queue.NackDead {
			t.Fatalf("nack = %s, %v", out, err)
		}
		ids = append(ids, id)
	}
	return ids
}

func TestDeadLetterListPeekSize(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		ids := f.killJobs(t, "q", 5)
		if n, err := f.client.DeadSize(ctx, f.ns, "q"); err != nil || n != 5 {
			t.Fatalf("DeadSize = %d, %v", n, err)
		}
		head, err := f.client.DeadPeek(ctx, f.ns, "q")
		if err != nil || head.ID != ids[0] || head.State != queue.StateDead {
			t.Fatalf("DeadPeek = %+v, %v", head, err)
		}
		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			page, err := f.client.DeadList(ctx, queue.DeadListParams{Namespace: f.ns, Queue: "q", Limit: 2, Cursor: cursor})
			if err != nil || page.Total != 5 {
				t.Fatalf("DeadList = %+v, %v", page, err)
			}
			for _, j := range page.Jobs {
				got = append(got, j.ID)
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
			if pages > 5 {
				t.Fatal("paging does not end")
			}
		}
		if len(got) != 5 || got[0] != ids[0] || got[4] != ids[4] {
			t.Fatalf("paged dead letter = %v, want %v", got, ids)
		}
		if _, err := f.client.DeadPeek(ctx, f.ns, "empty"); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("DeadPeek of an empty dead letter = %v", err)
		}
		if _, err := f.client.DeadList(ctx, queue.DeadListParams{Namespace: f.ns, Queue: "q", Cursor: "x"}); !errors.Is(err, sluice.ErrInvalid) {
			t.Fatalf("bad cursor = %v", err)
		}
	})
}

func TestDeadLetterRespawn(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		ctx := ctxT(t)
		ids := f.killJobs(t, "q", 4)
		// By ids, with a new ttl; an id that is not dead is passed over.
		got, err := f.client.DeadRespawn(ctx, queue.DeadRespawnParams{Namespace: f.ns, Queue: "q", IDs: []string{ids[2], "missing"}, TTL: time.Minute})
		if err != nil || len(got) != 1 || got[0] != ids[2] {
			t.Fatalf("respawn by id = %v, %v", got, err)
		}
		j, _ := f.client.Get(ctx, f.ns, "q", ids[2])
		if j.State != queue.StateReady || j.RemainingTries != 1 || j.TTL != time.Minute || time.Until(j.ExpiresAt) > time.Minute {
			t.Fatalf("respawned job = %+v", j)
		}
		// By limit, oldest first, keeping their own ttl.
		got, err = f.client.DeadRespawn(ctx, queue.DeadRespawnParams{Namespace: f.ns, Queue: "q", Limit: 2})
		if err != nil || len(got) != 2 || got[0] != ids[0] || got[1] != ids[1] {
			t.Fatalf("respawn by limit = %v, %v", got, err)
		}
		if j, _ := f.client.Get(ctx, f.ns, "q", ids[0]); j.TTL != time.Hour {
			t.Fatalf("respawn without ttl changed it: %+v", j)
		}
		// Respawned jobs are delivered again with fresh tries.
		ds := f.consume(t, queue.ConsumeParams{Queues: []string{"q"}, Count: 10})
		if len(ds) != 3 {
			t.Fatalf("consumed %d respawned jobs, want 3", len(ds))
		}
		for _, d := range ds {
			if d.RemainingTries != 0 || d.Delivery != 2 {
				t.Fatalf("respawned delivery = %+v", d)
			}
		}
		s := f.stats(t, "q")
		if s.Dead != 1 || s.Respawned != 3 {
			t.Fatalf("stats = %+v", s)
		}
	})
}

// killUnique publishes a job with unique key u and one try, and nacks it into the dead letter,
// which frees the key.
func (f *fixture) killUnique(t *testing.T, q, u string) string {
	t.Helper()
	id := f.publish(t, queue.PublishParams{Queue: q, Tries: 1, UniqueKey: u})
	d := f.consumeOne(t, q)
	if out, err := f.client.Nack(ctxT(t), queue.NackParams{Namespace: f.ns, Queue: q, ID: d.ID, Delivery: d.Delivery, Error: "e"}); err != nil || out != queue.NackDead || d.ID != id {
		t.Fatalf("nack of %s = %s, %v; want %s dead", d.ID, out, err, id)
	}
	return id
}

// A respawned job is pending again, so it holds its unique key again: a publish with the key is a
// duplicate of it. When another pending job took the key meanwhile, the respawned job runs without
// its key and the other job keeps it.
func TestDeadRespawnTakesBackUniqueKey(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{DefaultUniqueFor: time.Hour})
		ctx := ctxT(t)
		publishU := func(q, u string) queue.PublishResult {
			t.Helper()
			res, err := f.client.Publish(ctx, queue.PublishParams{Namespace: f.ns, Queue: q, UniqueKey: u})
			if err != nil {
				t.Fatalf("Publish: %v", err)
			}
			return res
		}
		respawn := func(q string, ids ...string) {
			t.Helper()
			got, err := f.client.DeadRespawn(ctx, queue.DeadRespawnParams{Namespace: f.ns, Queue: q, IDs: ids})
			if err != nil || len(got) != len(ids) {
				t.Fatalf("DeadRespawn(%v) = %v, %v", ids, got, err)
			}
		}
		uniqueKey := func(q, id string) string {
			t.Helper()
			j, err := f.client.Get(ctx, f.ns, q, id)
			if err != nil || j.State != queue.StateReady {
				t.Fatalf("Get(%s) = %+v, %v; want it ready", id, j, err)
			}
			return j.UniqueKey
		}

		// Nobody holds the key: the respawned job takes it back, for DefaultUniqueFor at most.
		a := f.killUnique(t, "a", "u")
		respawn("a", a)
		if u := uniqueKey("a", a); u != "u" {
			t.Fatalf("respawned job's unique key = %q, want %q", u, "u")
		}
		if res := publishU("a", "u"); !res.Duplicate || res.ID != a {
			t.Fatalf("Publish with the key of a respawned job = %+v, want a duplicate of %s", res, a)
		}
		pttl, err := env.Client.PTTL(ctx, env.Prefix+":{"+f.ns+":a}:u:u").Result()
		if err != nil || pttl <= 0 || pttl > time.Hour {
			t.Fatalf("unique key's PTTL = %s, %v; want within DefaultUniqueFor", pttl, err)
		}
		// It frees the key when it finishes, as any holder does.
		f.ack(t, f.consumeOne(t, "a"))
		if res := publishU("a", "u"); res.Duplicate {
			t.Fatalf("Publish after the respawned job was acked = %+v, want a new job", res)
		}

		// Another pending job took the key while this one was dead: it keeps it, and the respawned
		// job runs without a unique key.
		b := f.killUnique(t, "b", "u")
		holder := publishU("b", "u")
		if holder.Duplicate {
			t.Fatalf("Publish while the only job with the key is dead = %+v", holder)
		}
		respawn("b", b)
		if u := uniqueKey("b", b); u != "" {
			t.Fatalf("respawned job's unique key = %q, want none (job %s holds it)", u, holder.ID)
		}
		if res := publishU("b", "u"); !res.Duplicate || res.ID != holder.ID {
			t.Fatalf("Publish = %+v, want a duplicate of the holder %s", res, holder.ID)
		}
		// Acking the respawned job leaves the holder's key alone; acking the holder frees it.
		dh, db := f.consumeOne(t, "b"), f.consumeOne(t, "b")
		if dh.ID != holder.ID || db.ID != b {
			t.Fatalf("consumed %s, %s; want %s, %s", dh.ID, db.ID, holder.ID, b)
		}
		f.ack(t, db)
		if res := publishU("b", "u"); !res.Duplicate || res.ID != holder.ID {
			t.Fatalf("Publish after acking the respawned job = %+v, want a duplicate of %s", res, holder.ID)
		}
		f.ack(t, dh)
		if res := publishU("b", "u"); res.Duplicate {
			t.Fatalf("Publish after acking the holder = %+v, want a new job", res)
		}

		// Two dead jobs with one key respawned together: the first takes it, the second runs
		// without it.
		first := f.killUnique(t, "c", "u")
		second := f.killUnique(t, "c", "u")
		got, err := f.client.DeadRespawn(ctx, queue.DeadRespawnParams{Namespace: f.ns, Queue: "c", Limit: 2})
		if err != nil || len(got) != 2 || got[0] != first {
			t.Fatalf("DeadRespawn = %v, %v; want %s first", got, err, first)
		}
		for id, want := range map[string]string{first: "u", second: ""} {
			if u := uniqueKey("c", id); u != want {
				t.Fatalf("unique key of %s = %q, want %q", id, u, want)
			}
		}
	})
}

func TestDeadLetterDelete(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{})
	ctx := ctxT(t)
	ids := f.killJobs(t, "q", 4)
	if n, err := f.client.DeadDelete(ctx, queue.DeadDeleteParams{Namespace: f.ns, Queue: "q", IDs: []string{ids[3]}}); err != nil || n != 1 {
		t.Fatalf("delete by id = %d, %v", n, err)
	}
	if n, err := f.client.DeadDelete(ctx, queue.DeadDeleteParams{Namespace: f.ns, Queue: "q", Limit: 2}); err != nil || n != 2 {
		t.Fatalf("delete by limit = %d, %v", n, err)
	}
	page, _ := f.client.DeadList(ctx, queue.DeadListParams{Namespace: f.ns, Queue: "q"})
	if len(page.Jobs) != 1 || page.Jobs[0].ID != ids[2] {
		t.Fatalf("left in the dead letter: %+v", page.Jobs)
	}
	for _, id := range []string{ids[0], ids[1], ids[3]} {
		if _, err := f.client.Get(ctx, f.ns, "q", id); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("deleted dead job %s still readable", id)
		}
	}
	if _, err := f.client.DeadDelete(ctx, queue.DeadDeleteParams{Namespace: f.ns, Queue: "q"}); !errors.Is(err, sluice.ErrInvalid) {
		t.Fatalf("delete without ids or limit = %v", err)
	}
}

func TestDeadLetterIsBounded(t *testing.T) {
	t.Parallel()
	f := setup(t, redistest.New(t), queue.Config{MaxDead: 3})
	ids := f.killJobs(t, "q", 5)
	page, _ := f.client.DeadList(ctxT(t), queue.DeadListParams{Namespace: f.ns, Queue: "q"})
	if page.Total != 3 || page.Jobs[0].ID != ids[2] {
		t.Fatalf("dead letter = %d jobs from %s, want the newest 3", page.Total, page.Jobs[0].ID)
	}
	if s := f.stats(t, "q"); s.DeadDropped != 2 {
		t.Fatalf("stats = %+v, want 2 dropped", s)
	}
	if _, err := f.client.Get(ctxT(t), f.ns, "q", ids[0]); !errors.Is(err, queue.ErrNotFound) {
		t.Fatalf("a trimmed dead job is still readable")
	}
}

// Any cursor that parses is either past the end (an empty page) or invalid: a large offset never
// reaches Redis as a number it cannot read.
func TestDeadListLargeCursor(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, env *redistest.Env) {
		f := setup(t, env, queue.Config{})
		f.killJobs(t, "q", 2)
		for _, cursor := range []string{"2", "1000000", "100000000000000000", "9223372036854775807"} {
			res, err := f.client.DeadList(ctxT(t), queue.DeadListParams{Namespace: f.ns, Queue: "q", Cursor: cursor})
			if err != nil && !errors.Is(err, sluice.ErrInvalid) {
				t.Fatalf("DeadList(cursor %s): %v; want an empty page or ErrInvalid", cursor, err)
			}
			if err == nil && (len(res.Jobs) != 0 || res.NextCursor != "" || res.Total != 2) {
				t.Fatalf("DeadList(cursor %s) = %+v; want an empty last page of 2", cursor, res)
			}
		}
	})
}
