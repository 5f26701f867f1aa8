package mysqltest

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	_ "github.com/go-sql-driver/mysql"
)

func TestMain(m *testing.M) { Main(m) }

func open(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func TestEachTestGetsItsOwnDatabase(t *testing.T) {
	t.Parallel()
	a, b := open(t, New(t)), open(t, New(t))
	for _, db := range []*sql.DB{a, b} {
		if _, err := db.ExecContext(t.Context(), "CREATE TABLE items (id INT PRIMARY KEY)"); err != nil {
			t.Fatal(err) // would fail on the second db if both were one database
		}
	}
	if _, err := a.ExecContext(t.Context(), "INSERT INTO items VALUES (1), (2)"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := b.QueryRowContext(t.Context(), "SELECT COUNT(*) FROM items").Scan(&n); err != nil || n != 0 {
		t.Fatalf("b sees %d rows of a (err %v)", n, err)
	}
}

func TestDatabaseIsDroppedWhenTheTestEnds(t *testing.T) {
	t.Parallel()
	var name string
	t.Run("inner", func(t *testing.T) {
		db := open(t, New(t))
		if err := db.QueryRowContext(t.Context(), "SELECT DATABASE()").Scan(&name); err != nil {
			t.Fatal(err)
		}
	})
	if name == "" {
		t.Fatal("no database name")
	}
	inst, err := get()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	err = inst.admin.QueryRowContext(context.Background(),
		"SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name).Scan(&n)
	if err != nil || n != 0 {
		t.Fatalf("database %s still there after its test (count %d, err %v)", name, n, err)
	}
}

func TestLongTestNamesFitMySQLsLimit(t *testing.T) {
	t.Parallel()
	t.Run("a_subtest_name_that_is_much_longer_than_sixty_four_characters_in_total_for_sure", func(t *testing.T) {
		t.Parallel()
		db := open(t, New(t))
		if err := db.PingContext(t.Context()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestServerSpeaksUTF8MB4(t *testing.T) {
	t.Parallel()
	db := open(t, New(t))
	var cs string
	if err := db.QueryRowContext(t.Context(), "SELECT @@character_set_database").Scan(&cs); err != nil || cs != "utf8mb4" {
		t.Fatalf("character set %q (err %v)", cs, err)
	}
}

func BenchmarkServerStart(b *testing.B) {
	for b.Loop() {
		p, err := startServer()
		if err != nil {
			b.Fatal(err)
		}
		p.stop()
	}
}

func TestMissingBinaryFailsWithTheInstallCommand(t *testing.T) {
	t.Parallel()
	_, err := lookPath("sluice-no-such-mariadbd")
	if err == nil || err.Error() != InstallHint || !strings.Contains(InstallHint, "apt-get install -y mariadb-server") {
		t.Fatalf("err = %v", err)
	}
}
