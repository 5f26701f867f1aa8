// Package mysqltest gives tests a real MariaDB (or MySQL): one mariadbd started per test binary in a
// temporary directory on a free loopback port, and a fresh database per test, dropped when the test
// ends, so that tests run in parallel against one server.
//
// Tests never mock the database. A machine without mariadbd fails the test with the command that
// installs it; it never skips. Set SLUICE_TEST_MYSQL_DSN to a server you run yourself (a
// go-sql-driver DSN whose user may create and drop databases; its database name is ignored).
//
// Stop the server when the tests end, from TestMain:
//
//	func TestMain(m *testing.M) { mysqltest.Main(m) }
//
// or, in a package that also needs Redis, hand Stop to redistest.Main:
//
//	func TestMain(m *testing.M) { redistest.Main(m, mysqltest.Stop) }
package mysqltest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"go.uber.org/goleak"
)

// InstallHint is the failure when mariadbd is missing: tests need a real server.
const InstallHint = "mariadbd is not installed; install it with: sudo apt-get install -y mariadb-server " +
	"(or set SLUICE_TEST_MYSQL_DSN to a MySQL or MariaDB you run)"

// EnvDSN names the environment variable that points the tests at an existing server.
const EnvDSN = "SLUICE_TEST_MYSQL_DSN"

var (
	once    sync.Once
	shared  *instance // the server and its admin connection pool, made on first use
	initErr error
	dbSeq   atomic.Uint64
)

// instance is the server tests share: a started mariadbd (nil with SLUICE_TEST_MYSQL_DSN) and an
// admin pool that creates and drops the per-test databases.
type instance struct {
	proc  *process
	base  *mysql.Config
	admin *sql.DB
}

func get() (*instance, error) {
	once.Do(func() { shared, initErr = start() })
	return shared, initErr
}

func start() (*instance, error) {
	inst := &instance{}
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		p, err := startServer()
		if err != nil {
			return nil, err
		}
		inst.proc = p
		dsn = p.DSN()
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		inst.stop()
		return nil, fmt.Errorf("parse %s: %w", EnvDSN, err)
	}
	cfg.DBName = ""
	inst.base = cfg
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		inst.stop()
		return nil, err
	}
	inst.admin = sql.OpenDB(connector)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := inst.admin.PingContext(ctx); err != nil {
		inst.stop()
		return nil, fmt.Errorf("connect to %s: %w", cfg.Addr, err)
	}
	return inst, nil
}

func (inst *instance) stop() {
	if inst.admin != nil {
		_ = inst.admin.Close()
	}
	if inst.proc != nil {
		inst.proc.stop()
	}
}

// Stop stops the server the tests started, if any. Main calls it; a TestMain that runs its tests
// another way (redistest.Main) passes it along.
func Stop() {
	if shared != nil {
		shared.stop()
	}
}

// Main runs the tests of a package, stops the server they started and fails the run when a test
// leaked a goroutine. Call it from TestMain.
func Main(m *testing.M) {
	// Stop runs before the leak check: the shared server's pool and process watcher are not leaks.
	goleak.VerifyTestMain(runThenStop{m})
}

type runThenStop struct{ m *testing.M }

func (r runThenStop) Run() int {
	code := r.m.Run()
	Stop()
	return code
}

// New returns the DSN (go-sql-driver form) of a database made for the test alone, dropped when the
// test ends. It fails the test (never skips) when no server can be had.
func New(t testing.TB) string {
	t.Helper()
	inst, err := get()
	if err != nil {
		t.Fatalf("mysqltest: %v", err)
	}
	return inst.newDatabase(t)
}

func (inst *instance) newDatabase(t testing.TB) string {
	t.Helper()
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		default:
			return '_'
		}
	}, t.Name())
	name = fmt.Sprintf("t%d_%s", dbSeq.Add(1), name)
	if len(name) > 64 { // MySQL's limit for a database name
		name = name[:64]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := inst.admin.ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4"); err != nil {
		t.Fatalf("mysqltest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := inst.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			t.Errorf("mysqltest: drop database %s: %v", name, err)
		}
	})
	cfg := inst.base.Clone()
	cfg.DBName = name
	return cfg.FormatDSN()
}
