package mysqlarchive_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sluicehq/sluice/internal/testkit/mysqltest"
	"github.com/sluicehq/sluice/internal/testkit/testwait"
	"github.com/sluicehq/sluice/relay"
	"github.com/sluicehq/sluice/relay/mysqlarchive"
)

func TestMain(m *testing.M) { mysqltest.Main(m) }

// setup opens an archive on a fresh database and returns it with the DSN.
func setup(t *testing.T, cfg mysqlarchive.Config) (*mysqlarchive.Archive, string) {
	t.Helper()
	dsn := mysqltest.New(t)
	a, err := mysqlarchive.Open(t.Context(), dsn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a, dsn
}

func count(t *testing.T, dsn, table string) int {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.FixedZone("CET", 3600))

func full(id string) relay.ArchiveRecord {
	return relay.ArchiveRecord{
		ID:            id,
		Endpoint:      "imagegen",
		Namespace:     "shop",
		Status:        "completed",
		HTTPStatus:    200,
		Result:        []byte("\x00binary\xffbody"),
		ResultHeaders: json.RawMessage(`{"Content-Type":["image/png"]}`),
		Error:         "",
		Priority:      7,
		Tries:         2,
		CreatedAt:     t0,
		StartedAt:     t0.Add(time.Second),
		EndedAt:       t0.Add(3 * time.Second),
	}
}

// same compares records as the archive stores them: UTC, microseconds.
func same(t *testing.T, got, want relay.ArchiveRecord) {
	t.Helper()
	norm := func(tm time.Time) time.Time {
		if tm.IsZero() {
			return tm
		}
		return tm.UTC().Truncate(time.Microsecond)
	}
	want.CreatedAt, want.StartedAt, want.EndedAt = norm(want.CreatedAt), norm(want.StartedAt), norm(want.EndedAt)
	if !bytes.Equal(got.Result, want.Result) || string(got.ResultHeaders) != string(want.ResultHeaders) {
		t.Fatalf("result %q headers %s, want %q %s", got.Result, got.ResultHeaders, want.Result, want.ResultHeaders)
	}
	got.Result, want.Result, got.ResultHeaders, want.ResultHeaders = nil, nil, nil, nil
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	a, _ := setup(t, mysqlarchive.Config{})
	rec := full("task-1")
	failed := relay.ArchiveRecord{ID: "task-2", Status: "failed", Error: "dial tcp: refused", CreatedAt: t0}
	if err := a.Put(t.Context(), rec, failed); err != nil {
		t.Fatal(err)
	}
	got, err := a.Get(t.Context(), "task-1")
	if err != nil {
		t.Fatal(err)
	}
	same(t, got, rec)
	if got.CreatedAt.Location() != time.UTC {
		t.Errorf("CreatedAt in %v, want UTC", got.CreatedAt.Location())
	}
	got, err = a.Get(t.Context(), "task-2")
	if err != nil {
		t.Fatal(err)
	}
	same(t, got, failed) // zero times come back zero (NULL), no result, no headers
	if got.Result != nil || got.ResultHeaders != nil || !got.StartedAt.IsZero() || !got.EndedAt.IsZero() {
		t.Fatalf("NULL columns came back as %+v", got)
	}
}

func TestGetNotFound(t *testing.T) {
	t.Parallel()
	a, _ := setup(t, mysqlarchive.Config{})
	if _, err := a.Get(t.Context(), "nope"); !errors.Is(err, relay.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
}

func TestPutIsAnIdempotentUpsert(t *testing.T) {
	t.Parallel()
	a, dsn := setup(t, mysqlarchive.Config{Table: "archived"})
	rec := full("task-1")
	for range 3 {
		if err := a.Put(t.Context(), rec); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(t, dsn, "archived"); n != 1 {
		t.Fatalf("%d rows after writing one record three times", n)
	}
	rec.Status, rec.HTTPStatus, rec.Result, rec.Tries = "failed", 503, []byte("later"), 3
	if err := a.Put(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	got, err := a.Get(t.Context(), "task-1")
	if err != nil {
		t.Fatal(err)
	}
	same(t, got, rec)
}

func TestPutWritesInBatches(t *testing.T) {
	t.Parallel()
	a, dsn := setup(t, mysqlarchive.Config{BatchSize: 7})
	recs := make([]relay.ArchiveRecord, 50)
	for i := range recs {
		recs[i] = full(fmt.Sprintf("task-%02d", i))
	}
	recs = append(recs, recs[3]) // a record twice in one call is one row
	if err := a.Put(t.Context(), recs...); err != nil {
		t.Fatal(err)
	}
	if n := count(t, dsn, "sluice_tasks"); n != 50 {
		t.Fatalf("%d rows, want 50", n)
	}
	// Large results split a batch by size too (4 MiB per INSERT), under max_allowed_packet.
	big := bytes.Repeat([]byte("x"), 3<<20)
	large := []relay.ArchiveRecord{full("big-1"), full("big-2"), full("big-3")}
	for i := range large {
		large[i].Result = big
	}
	if err := a.Put(t.Context(), large...); err != nil {
		t.Fatal(err)
	}
	got, err := a.Get(t.Context(), "big-3")
	if err != nil || !bytes.Equal(got.Result, big) {
		t.Fatalf("big result: %d bytes, err %v", len(got.Result), err)
	}
}

func TestPutRejectsBadRecords(t *testing.T) {
	t.Parallel()
	a, dsn := setup(t, mysqlarchive.Config{})
	for field, mut := range map[string]func(*relay.ArchiveRecord){
		"ID":            func(r *relay.ArchiveRecord) { r.ID = "" },
		"Endpoint":      func(r *relay.ArchiveRecord) { r.Endpoint = strings.Repeat("e", 192) },
		"Namespace":     func(r *relay.ArchiveRecord) { r.Namespace = "\xff" },
		"Status":        func(r *relay.ArchiveRecord) { r.Status = "" },
		"ResultHeaders": func(r *relay.ArchiveRecord) { r.ResultHeaders = json.RawMessage(`{"a":`) },
		"CreatedAt":     func(r *relay.ArchiveRecord) { r.CreatedAt = time.Time{} },
	} {
		good, bad := full("good"), full("bad")
		mut(&bad)
		err := a.Put(t.Context(), good, bad)
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: err = %v, want one naming the field", field, err)
		}
	}
	if n := count(t, dsn, "sluice_tasks"); n != 0 {
		t.Fatalf("%d rows written by calls that were refused", n)
	}
}

func TestLongErrorsAreCut(t *testing.T) {
	t.Parallel()
	a, _ := setup(t, mysqlarchive.Config{})
	rec := full("task-1")
	rec.Error = strings.Repeat("é", 40000) + "\xff" // 80 KB, one invalid byte
	if err := a.Put(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	got, err := a.Get(t.Context(), "task-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Error) > 1<<16-1 || !strings.HasPrefix(rec.Error, got.Error) || len(got.Error) < 60000 {
		t.Fatalf("error of %d bytes kept as %d bytes", len(rec.Error), len(got.Error))
	}
}

func TestDeleteBeforeRemovesOnlyOldRowsInBatches(t *testing.T) {
	t.Parallel()
	a, dsn := setup(t, mysqlarchive.Config{})
	cutoff := time.Now().Add(-72 * time.Hour)
	var recs []relay.ArchiveRecord
	for i := range 25 {
		r := full(fmt.Sprintf("old-%02d", i))
		r.CreatedAt = cutoff.Add(-time.Duration(i+1) * time.Minute)
		recs = append(recs, r)
	}
	for i := range 5 {
		r := full(fmt.Sprintf("new-%02d", i))
		r.CreatedAt = cutoff.Add(time.Duration(i+1) * time.Minute)
		recs = append(recs, r)
	}
	if err := a.Put(t.Context(), recs...); err != nil {
		t.Fatal(err)
	}
	n, err := a.DeleteBefore(t.Context(), cutoff, 10) // three statements: 10, 10, 5
	if err != nil || n != 25 {
		t.Fatalf("deleted %d (err %v), want 25", n, err)
	}
	if left := count(t, dsn, "sluice_tasks"); left != 5 {
		t.Fatalf("%d rows left, want 5", left)
	}
	if _, err := a.Get(t.Context(), "new-00"); err != nil {
		t.Fatalf("a recent task was deleted: %v", err)
	}
	if _, err := a.Get(t.Context(), "old-00"); !errors.Is(err, relay.ErrNotFound) {
		t.Fatalf("an old task is still there: %v", err)
	}
	if n, err := a.DeleteBefore(t.Context(), cutoff, 10); err != nil || n != 0 {
		t.Fatalf("second pass deleted %d (err %v)", n, err)
	}
	if _, err := a.DeleteBefore(t.Context(), cutoff, 0); err == nil || !strings.Contains(err.Error(), "batch") {
		t.Fatalf("batch 0: err = %v", err)
	}
}

func TestDeleteBeforeStopsWithItsContext(t *testing.T) {
	t.Parallel()
	a, dsn := setup(t, mysqlarchive.Config{})
	var recs []relay.ArchiveRecord
	for i := range 6 {
		r := full(fmt.Sprintf("old-%d", i))
		r.CreatedAt = time.Now().Add(-100 * time.Hour)
		recs = append(recs, r)
	}
	if err := a.Put(t.Context(), recs...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := a.DeleteBefore(ctx, time.Now(), 2); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := count(t, dsn, "sluice_tasks"); n != 6 {
		t.Fatalf("%d rows left by a cancelled delete, want 6", n)
	}
}

func TestRetentionLoopPrunesOldTasks(t *testing.T) {
	t.Parallel()
	a, dsn := setup(t, mysqlarchive.Config{Retention: time.Hour, BatchSize: 2})
	old, recent := full("old"), full("recent")
	old.CreatedAt = time.Now().Add(-2 * time.Hour)
	recent.CreatedAt = time.Now()
	if err := a.Put(t.Context(), old, recent); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); a.RunRetention(ctx, time.Hour) }()
	stop := func() {
		cancel()
		<-done
	}
	t.Cleanup(stop) // also when the wait below fails
	testwait.Until(t, time.Minute, "the retention loop to delete the old task", func() bool {
		return count(t, dsn, "sluice_tasks") == 1
	})
	stop()
	if _, err := a.Get(t.Context(), "recent"); err != nil {
		t.Fatalf("recent task: %v", err)
	}
}

func TestOpenTwiceKeepsTheTable(t *testing.T) {
	t.Parallel()
	a, dsn := setup(t, mysqlarchive.Config{})
	if err := a.Put(t.Context(), full("task-1")); err != nil {
		t.Fatal(err)
	}
	dc, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	dc.ParseTime, dc.Loc = false, time.Local
	b, err := mysqlarchive.Open(t.Context(), dc.FormatDSN(), mysqlarchive.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got, err := b.Get(t.Context(), "task-1")
	if err != nil {
		t.Fatal(err)
	}
	same(t, got, full("task-1")) // the DSN's parseTime and loc do not change how times read
}

func TestOpenValidates(t *testing.T) {
	t.Parallel()
	dsn := mysqltest.New(t)
	for field, cfg := range map[string]mysqlarchive.Config{
		"Table":        {Table: "bad-name"},
		"Retention":    {Retention: time.Millisecond},
		"BatchSize":    {BatchSize: -1},
		"MaxOpenConns": {MaxOpenConns: -1},
	} {
		if _, err := mysqlarchive.Open(t.Context(), dsn, cfg); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: err = %v, want one naming the field", field, err)
		}
	}
	if _, err := mysqlarchive.Open(t.Context(), "root@tcp(127.0.0.1:1)/", mysqlarchive.Config{}); err == nil {
		t.Error("a DSN without a database was accepted")
	}
	if _, err := mysqlarchive.Open(t.Context(), "::not a dsn", mysqlarchive.Config{}); err == nil {
		t.Error("a bad DSN was accepted")
	}
}
