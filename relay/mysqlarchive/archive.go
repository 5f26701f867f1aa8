// Package mysqlarchive keeps finished request-queue tasks in MySQL or MariaDB after Redis has let
// them go, so that a caller who comes back days later still gets its result: it is the
// relay.Archive to set as relay.Config.Archive. It lives apart from package relay so that only
// programs that archive link a SQL driver.
//
// Redis holds a finished task for an hour or so; the archive holds it for Config.Retention (72h by
// default), indexed by creation time so that old rows are deleted in small batches. Writes are
// idempotent upserts keyed by task id: a relay that archives a task twice (it crashed between the
// write and forgetting the task) leaves one row.
package mysqlarchive

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-sql-driver/mysql"

	"github.com/sluicehq/sluice/relay"
)

// Archive is a relay.Archive.
var _ relay.Archive = (*Archive)(nil)

const (
	maxKeyLen    = 191       // utf8mb4 characters that fit an index key of 767 bytes
	maxStatusLen = 32        // the status column
	maxResult    = 1<<24 - 1 // MEDIUMBLOB
	maxError     = 1<<16 - 1 // TEXT, in bytes
	// maxBatchBytes bounds the payload of one INSERT, well below MySQL's smallest default
	// max_allowed_packet (MariaDB's 16 MiB), whatever BatchSize says.
	maxBatchBytes = 4 << 20
)

// columns are the table's columns in the order Put binds them.
const columns = "id, endpoint, namespace, status, http_status, result, result_headers, error, priority, tries, created_at, started_at, ended_at"

// Archive is a handle on the archive table. It is safe for concurrent use.
type Archive struct {
	cfg Config
	db  *sql.DB

	insertHead, insertTail, getSQL, deleteSQL string
}

// Open connects to the database named by dsn (go-sql-driver form, user:pass@tcp(host:3306)/db),
// creates the table when it is missing and returns the Archive. Times are read and written in UTC
// whatever the DSN says.
func Open(ctx context.Context, dsn string, cfg Config) (*Archive, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	dc, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("mysqlarchive: dsn: %w", err)
	}
	if dc.DBName == "" {
		return nil, errors.New("mysqlarchive: dsn names no database")
	}
	dc.ParseTime = true
	dc.Loc = time.UTC
	connector, err := mysql.NewConnector(dc)
	if err != nil {
		return nil, fmt.Errorf("mysqlarchive: dsn: %w", err)
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(cfg.MaxOpenConns)
	db.SetMaxIdleConns(cfg.MaxOpenConns)
	// Servers close idle connections after wait_timeout; replacing them first avoids the error.
	db.SetConnMaxLifetime(3 * time.Minute)
	a := &Archive{cfg: cfg, db: db}
	t := "`" + cfg.Table + "`"
	updates := make([]string, 0, 12)
	for c := range strings.SplitSeq(columns, ", ") {
		if c != "id" {
			updates = append(updates, c+" = VALUES("+c+")")
		}
	}
	a.insertHead = "INSERT INTO " + t + " (" + columns + ") VALUES "
	a.insertTail = " ON DUPLICATE KEY UPDATE " + strings.Join(updates, ", ")
	a.getSQL = "SELECT " + columns + " FROM " + t + " WHERE id = ?"
	a.deleteSQL = "DELETE FROM " + t + " WHERE created_at < ? ORDER BY created_at LIMIT ?"
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+t+` (
		id             VARCHAR(191) NOT NULL,
		endpoint       VARCHAR(191) NOT NULL DEFAULT '',
		namespace      VARCHAR(191) NOT NULL DEFAULT '',
		status         VARCHAR(32)  NOT NULL,
		http_status    INT          NOT NULL DEFAULT 0,
		result         MEDIUMBLOB   NULL,
		result_headers TEXT         NULL,
		error          TEXT         NULL,
		priority       INT          NOT NULL DEFAULT 0,
		tries          INT          NOT NULL DEFAULT 0,
		created_at     DATETIME(6)  NOT NULL,
		started_at     DATETIME(6)  NULL,
		ended_at       DATETIME(6)  NULL,
		PRIMARY KEY (id),
		KEY created_at (created_at)
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("mysqlarchive: create table %s: %w", cfg.Table, err)
	}
	return a, nil
}

// Close closes the connections.
func (a *Archive) Close() error { return a.db.Close() }

// Put writes records, replacing any row with the same ID, in batches of at most Config.BatchSize
// rows (and a few MiB). Each batch is atomic; when a later one fails the earlier ones stay
// written, which is safe because writing a record again changes nothing. A record is refused
// unless its ID is 1 to 191 characters, its Endpoint and Namespace at most 191, its Status 1 to
// 32 bytes, its Result below 16 MiB (the column), its ResultHeaders valid JSON of at most 64 KiB
// and its CreatedAt set; an Error over 64 KiB is cut. Times are stored in UTC with microsecond
// precision.
func (a *Archive) Put(ctx context.Context, recs ...relay.ArchiveRecord) error {
	for i := range recs {
		if err := validate(&recs[i]); err != nil {
			return err
		}
	}
	for len(recs) > 0 {
		n, size := 0, 0
		for n < len(recs) && n < a.cfg.BatchSize && (n == 0 || size+recordSize(&recs[n]) <= maxBatchBytes) {
			size += recordSize(&recs[n])
			n++
		}
		if err := a.insert(ctx, recs[:n]); err != nil {
			return err
		}
		recs = recs[n:]
	}
	return nil
}

func (a *Archive) insert(ctx context.Context, recs []relay.ArchiveRecord) error {
	var sb strings.Builder
	sb.WriteString(a.insertHead)
	args := make([]any, 0, 13*len(recs))
	for i, r := range recs {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
		var headers any
		if len(r.ResultHeaders) > 0 {
			headers = string(r.ResultHeaders)
		}
		var result any
		if r.Result != nil {
			result = r.Result
		}
		args = append(args, r.ID, r.Endpoint, r.Namespace, r.Status, r.HTTPStatus, result, headers,
			cutUTF8(r.Error, maxError), r.Priority, r.Tries, r.CreatedAt.UTC(), nullTime(r.StartedAt), nullTime(r.EndedAt))
	}
	sb.WriteString(a.insertTail)
	if _, err := a.db.ExecContext(ctx, sb.String(), args...); err != nil {
		return fmt.Errorf("mysqlarchive: put %d records: %w", len(recs), err)
	}
	return nil
}

// Get returns the record of task id, or an error matching relay.ErrNotFound.
func (a *Archive) Get(ctx context.Context, id string) (relay.ArchiveRecord, error) {
	var (
		r                relay.ArchiveRecord
		result           []byte
		headers, errText sql.NullString
		started, ended   sql.NullTime
	)
	err := a.db.QueryRowContext(ctx, a.getSQL, id).Scan(&r.ID, &r.Endpoint, &r.Namespace, &r.Status,
		&r.HTTPStatus, &result, &headers, &errText, &r.Priority, &r.Tries, &r.CreatedAt, &started, &ended)
	if errors.Is(err, sql.ErrNoRows) {
		return relay.ArchiveRecord{}, fmt.Errorf("mysqlarchive: %w: task %q", relay.ErrNotFound, id)
	}
	if err != nil {
		return relay.ArchiveRecord{}, fmt.Errorf("mysqlarchive: get %q: %w", id, err)
	}
	r.Result = result
	if headers.Valid {
		r.ResultHeaders = json.RawMessage(headers.String)
	}
	r.Error = errText.String
	r.StartedAt, r.EndedAt = started.Time, ended.Time
	return r, nil
}

// DeleteBefore deletes the tasks created before cutoff, batch rows per statement so that no
// statement holds locks on many rows, until none is left or ctx ends. It returns how many it
// deleted.
func (a *Archive) DeleteBefore(ctx context.Context, cutoff time.Time, batch int) (int64, error) {
	if batch < 1 {
		return 0, fmt.Errorf("mysqlarchive: DeleteBefore batch %d must be at least 1", batch)
	}
	var total int64
	for {
		res, err := a.db.ExecContext(ctx, a.deleteSQL, cutoff.UTC(), batch)
		if err != nil {
			return total, fmt.Errorf("mysqlarchive: delete before %s: %w", cutoff.UTC().Format(time.RFC3339), err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, fmt.Errorf("mysqlarchive: delete before %s: %w", cutoff.UTC().Format(time.RFC3339), err)
		}
		total += n
		if n < int64(batch) {
			return total, nil
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}

// Prune deletes the tasks older than Config.Retention, Config.BatchSize rows at a time. The relay
// calls it from its maintenance loop; RunRetention calls it on a timer.
func (a *Archive) Prune(ctx context.Context) (int64, error) {
	return a.DeleteBefore(ctx, time.Now().Add(-a.cfg.Retention), a.cfg.BatchSize)
}

// RunRetention prunes at once and then every interval until ctx ends; failures are logged and
// retried at the next tick. It blocks: run it in a goroutine and cancel ctx to stop it.
func (a *Archive) RunRetention(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = time.Hour
	}
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		n, err := a.Prune(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			a.cfg.Logger.WarnContext(ctx, "mysqlarchive: retention pass failed", "table", a.cfg.Table, "deleted", n, "error", err)
		case n > 0:
			a.cfg.Logger.InfoContext(ctx, "mysqlarchive: retention pass", "table", a.cfg.Table, "deleted", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// validate checks that r fits the table.
func validate(r *relay.ArchiveRecord) error {
	switch {
	case r.ID == "" || utf8.RuneCountInString(r.ID) > maxKeyLen || !utf8.ValidString(r.ID):
		return fmt.Errorf("mysqlarchive: record %q: ID must be 1-%d characters of valid UTF-8", r.ID, maxKeyLen)
	case utf8.RuneCountInString(r.Endpoint) > maxKeyLen || !utf8.ValidString(r.Endpoint):
		return fmt.Errorf("mysqlarchive: record %q: Endpoint must be at most %d characters of valid UTF-8", r.ID, maxKeyLen)
	case utf8.RuneCountInString(r.Namespace) > maxKeyLen || !utf8.ValidString(r.Namespace):
		return fmt.Errorf("mysqlarchive: record %q: Namespace must be at most %d characters of valid UTF-8", r.ID, maxKeyLen)
	case r.Status == "" || len(r.Status) > maxStatusLen:
		return fmt.Errorf("mysqlarchive: record %q: Status must be 1-%d bytes", r.ID, maxStatusLen)
	case len(r.Result) > maxResult:
		return fmt.Errorf("mysqlarchive: record %q: Result is %d bytes, more than %d", r.ID, len(r.Result), maxResult)
	case len(r.ResultHeaders) > 0 && (len(r.ResultHeaders) > maxError || !json.Valid(r.ResultHeaders)):
		return fmt.Errorf("mysqlarchive: record %q: ResultHeaders must be valid JSON of at most %d bytes", r.ID, maxError)
	case r.CreatedAt.IsZero():
		return fmt.Errorf("mysqlarchive: record %q: CreatedAt is required (retention counts from it)", r.ID)
	}
	return nil
}

// recordSize approximates the bytes a record adds to an INSERT.
func recordSize(r *relay.ArchiveRecord) int {
	return len(r.ID) + len(r.Endpoint) + len(r.Namespace) + len(r.Status) + len(r.Result) +
		len(r.ResultHeaders) + min(len(r.Error), maxError) + 64
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC()
}

// cutUTF8 returns s made valid UTF-8 and cut to at most n bytes on a character boundary.
func cutUTF8(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
