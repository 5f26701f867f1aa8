package cache_test

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/cache"
)

type User struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
}

// usersDB stands in for a database table.
type usersDB struct {
	mu    sync.Mutex
	rows  map[int]User
	reads atomic.Int64
}

func newUsersDB() *usersDB {
	return &usersDB{rows: map[int]User{1: {1, "ada"}, 2: {2, "grace"}, 3: {3, "linus"}}}
}

func (db *usersDB) load(_ context.Context, id int) (User, error) {
	db.reads.Add(1)
	db.mu.Lock()
	defer db.mu.Unlock()
	u, ok := db.rows[id]
	if !ok {
		return User{}, cache.ErrNotFound
	}
	return u, nil
}

func (db *usersDB) loadMany(_ context.Context, ids []int) (map[int]User, error) {
	db.reads.Add(1)
	db.mu.Lock()
	defer db.mu.Unlock()
	out := map[int]User{}
	for _, id := range ids {
		if u, ok := db.rows[id]; ok {
			out[id] = u
		}
	}
	return out, nil
}

func (db *usersDB) rename(id int, name string) {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.rows[id] = User{id, name}
}

// Get loads a missing key once and then serves it from Redis with one GET.
func ExampleStore_Get() {
	rdb, prefix, done := exampleRedis()
	defer done()
	ctx := context.Background()
	db := newUsersDB()

	users, err := cache.New[int, User](rdb, cache.Config{Prefix: prefix, TTL: 10 * time.Minute})
	if err != nil {
		panic(err)
	}
	defer users.Close()

	for range 3 {
		u, err := users.Get(ctx, 1, db.load)
		fmt.Println(u.Name, err)
	}
	fmt.Println("database reads:", db.reads.Load())
	// Output:
	// ada <nil>
	// ada <nil>
	// ada <nil>
	// database reads: 1
}

// A loader that returns ErrNotFound has that answer cached for EmptyTTL, so repeated lookups of a
// key that does not exist (penetration) do not reach the database.
func ExampleStore_Get_notFound() {
	rdb, prefix, done := exampleRedis()
	defer done()
	ctx := context.Background()
	db := newUsersDB()
	users, _ := cache.New[int, User](rdb, cache.Config{Prefix: prefix, EmptyTTL: time.Minute})
	defer users.Close()

	for range 3 {
		_, err := users.Get(ctx, 404, db.load)
		fmt.Println(errors.Is(err, cache.ErrNotFound))
	}
	fmt.Println("database reads:", db.reads.Load())
	// Output:
	// true
	// true
	// true
	// database reads: 1
}

// Update the database, then Delete the key. In Strong mode every Get that starts after Delete
// returns sees the update, and a load that read the old row before the Delete cannot write it
// back.
func ExampleStore_Delete() {
	rdb, prefix, done := exampleRedis()
	defer done()
	ctx := context.Background()
	db := newUsersDB()
	users, _ := cache.New[int, User](rdb, cache.Config{Prefix: prefix, Mode: cache.Strong})
	defer users.Close()

	u, _ := users.Get(ctx, 2, db.load)
	fmt.Println(u.Name)

	db.rename(2, "grace hopper")
	if err := users.Delete(ctx, 2); err != nil {
		panic(err)
	}
	u, _ = users.Get(ctx, 2, db.load)
	fmt.Println(u.Name)
	// Output:
	// grace
	// grace hopper
}

// In Eventual mode (the default) a Get right after a Delete may still return the old value while
// one reader reloads it in the background; the key converges to the database.
func ExampleStore_Delete_eventual() {
	rdb, prefix, done := exampleRedis()
	defer done()
	ctx := context.Background()
	db := newUsersDB()
	users, _ := cache.New[int, User](rdb, cache.Config{Prefix: prefix})
	defer users.Close()

	_, _ = users.Get(ctx, 3, db.load)
	db.rename(3, "linus t")
	_ = users.Delete(ctx, 3)

	for {
		u, _ := users.Get(ctx, 3, db.load) // "linus" until the reload lands
		if u.Name == "linus t" {
			fmt.Println(u.Name)
			break
		}
		time.Sleep(time.Millisecond) // the pace of this poll (an example has no test to fail)
	}
	// Output:
	// linus t
}

// GetMany answers cached keys with MGETs and loads all the missing ones with one batch call.
func ExampleStore_GetMany() {
	rdb, prefix, done := exampleRedis()
	defer done()
	ctx := context.Background()
	db := newUsersDB()
	users, _ := cache.New[int, User](rdb, cache.Config{Prefix: prefix})
	defer users.Close()

	_, _ = users.Get(ctx, 1, db.load) // one key already cached

	got, err := users.GetMany(ctx, []int{1, 2, 3, 404}, db.loadMany)
	if err != nil {
		panic(err)
	}
	ids := make([]int, 0, len(got))
	for id := range got {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		fmt.Println(id, got[id].Name)
	}
	fmt.Println("database reads:", db.reads.Load())
	// Output:
	// 1 ada
	// 2 grace
	// 3 linus
	// database reads: 2
}

// Set writes a value through, for code that has just written the database and holds the new row.
func ExampleStore_Set() {
	rdb, prefix, done := exampleRedis()
	defer done()
	ctx := context.Background()
	db := newUsersDB()
	users, _ := cache.New[int, User](rdb, cache.Config{Prefix: prefix})
	defer users.Close()

	db.rename(1, "ada lovelace")
	_ = users.Set(ctx, 1, User{1, "ada lovelace"})
	u, _ := users.Get(ctx, 1, db.load)
	fmt.Println(u.Name, "database reads:", db.reads.Load())
	// Output:
	// ada lovelace database reads: 0
}

// With RefreshAhead, a Get that finds a value close to its expiry returns it at once and starts
// one background reload, so hot keys never expire under their readers.
func ExampleConfig_refreshAhead() {
	rdb, prefix, done := exampleRedis()
	defer done()
	ctx := context.Background()
	db := newUsersDB()
	users, _ := cache.New[int, User](rdb, cache.Config{
		Prefix:       prefix,
		TTL:          time.Second,
		RefreshAhead: 990 * time.Millisecond, // due 10ms after each load
	})
	defer users.Close()

	u, _ := users.Get(ctx, 1, db.load)
	fmt.Println(u.Name)
	db.rename(1, "countess")
	for {
		u, err := users.Get(ctx, 1, db.load) // never waits for the reload
		if err != nil {
			panic(err)
		}
		if u.Name == "countess" {
			fmt.Println(u.Name)
			break
		}
		time.Sleep(time.Millisecond) // the pace of this poll (an example has no test to fail)
	}
	// Output:
	// ada
	// countess
}

// When Redis is in trouble, switch reads off (or let LoadOnError do it per call): the loader is
// called directly, one call per key at a time and at most DegradedConcurrency at once.
func ExampleStore_BypassReads() {
	rdb, prefix, done := exampleRedis()
	defer done()
	ctx := context.Background()
	db := newUsersDB()
	users, _ := cache.New[int, User](rdb, cache.Config{
		Prefix:              prefix,
		OnRedisError:        cache.LoadOnError,
		DegradedConcurrency: 4,
	})
	defer users.Close()

	users.BypassReads(true)
	users.BypassDeletes(true)
	u, _ := users.Get(ctx, 2, db.load)
	fmt.Println(u.Name, users.Stats().Degraded)
	_ = users.Delete(ctx, 2) // a no-op while deletes are bypassed

	users.BypassReads(false)
	users.BypassDeletes(false)
	u, _ = users.Get(ctx, 2, db.load)
	fmt.Println(u.Name, users.Stats().Misses)
	// Output:
	// grace 1
	// grace 1
}

// A loader that panics releases the key's lock and its callers get ErrLoaderPanic; the process
// keeps running.
func ExampleLoader_panic() {
	rdb, prefix, done := exampleRedis()
	defer done()
	ctx := context.Background()
	users, _ := cache.New[int, User](rdb, cache.Config{Prefix: prefix, Logger: discard})
	defer users.Close()

	_, err := users.Get(ctx, 1, func(context.Context, int) (User, error) { panic("nil map") })
	fmt.Println(errors.Is(err, cache.ErrLoaderPanic))
	u, err := users.Get(ctx, 1, newUsersDB().load)
	fmt.Println(u.Name, err)
	// Output:
	// true
	// ada <nil>
}

// Stats and Hooks feed metrics.
func ExampleStore_Stats() {
	rdb, prefix, done := exampleRedis()
	defer done()
	ctx := context.Background()
	db := newUsersDB()
	var loads atomic.Int64
	users, _ := cache.New[int, User](rdb, cache.Config{
		Prefix: prefix,
		Hooks: cache.Hooks{
			OnLoad: func(key string, d time.Duration, err error) { loads.Add(1) },
		},
	})
	defer users.Close()

	for _, id := range []int{1, 1, 2, 1} {
		_, _ = users.Get(ctx, id, db.load)
	}
	st := users.Stats()
	fmt.Printf("hits=%d misses=%d loads=%d hooked=%d\n", st.Hits, st.Misses, st.Loads, loads.Load())
	// Output:
	// hits=2 misses=2 loads=2 hooked=2
}

// gobCodec is a custom Codec; any type with Marshal and Unmarshal will do (msgpack, protobuf...).
type gobCodec struct{}

func (gobCodec) Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(v)
	return b.Bytes(), err
}

func (gobCodec) Unmarshal(data []byte, v any) error {
	return gob.NewDecoder(bytes.NewReader(data)).Decode(v)
}

// A Codec other than the default JSON.
func ExampleCodec() {
	rdb, prefix, done := exampleRedis()
	defer done()
	ctx := context.Background()
	db := newUsersDB()
	users, _ := cache.New[int, User](rdb, cache.Config{Prefix: prefix, Codec: gobCodec{}})
	defer users.Close()

	_, _ = users.Get(ctx, 3, db.load)  // loaded, stored as gob
	u, _ := users.Get(ctx, 3, db.load) // decoded from gob
	fmt.Println(u.Name, "database reads:", db.reads.Load())
	// Output:
	// linus database reads: 1
}
