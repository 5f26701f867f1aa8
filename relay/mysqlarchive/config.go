package mysqlarchive

import (
	"cmp"
	"fmt"
	"log/slog"
	"regexp"
	"time"
)

// Config configures an Archive. The zero value is usable: every field's comment states its default.
type Config struct {
	// Table is the table the archive keeps its rows in, created by Open when missing. Letters,
	// digits and underscores, at most 64. Default "sluice_tasks".
	Table string
	// Retention is how long a task is kept, counted from its creation; Prune and RunRetention
	// delete older rows. Default 72h.
	Retention time.Duration
	// BatchSize is the most rows one INSERT writes and one DELETE removes, so neither statement
	// holds locks or builds a packet without bound. Default 500.
	BatchSize int
	// MaxOpenConns caps the connections to the database. Default 8.
	MaxOpenConns int
	// Logger receives RunRetention's failures and a line per pass that deleted rows. Default
	// slog.Default().
	Logger *slog.Logger
}

var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

func (c Config) withDefaults() Config {
	c.Table = cmp.Or(c.Table, "sluice_tasks")
	c.Retention = cmp.Or(c.Retention, 72*time.Hour)
	c.BatchSize = cmp.Or(c.BatchSize, 500)
	c.MaxOpenConns = cmp.Or(c.MaxOpenConns, 8)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

func (c Config) validate() error {
	switch {
	case !tableName.MatchString(c.Table):
		return fmt.Errorf("mysqlarchive: Config.Table %q must be 1-64 letters, digits or underscores, not starting with a digit", c.Table)
	case c.Retention < time.Second:
		return fmt.Errorf("mysqlarchive: Config.Retention %v must be at least 1s", c.Retention)
	case c.BatchSize < 1 || c.BatchSize > 5000:
		return fmt.Errorf("mysqlarchive: Config.BatchSize %d must be in [1, 5000]", c.BatchSize)
	case c.MaxOpenConns < 1:
		return fmt.Errorf("mysqlarchive: Config.MaxOpenConns %d must be at least 1", c.MaxOpenConns)
	}
	return nil
}
