package mysqltest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sluicehq/sluice/internal/testkit/testproc"
)

// process is one mariadbd started for the tests, with its data in dir.
type process struct {
	*testproc.Process
	dir string
}

// DSN is a go-sql-driver DSN for root on the server, with no database selected.
func (p *process) DSN() string { return rootConfig(p.Addr()).FormatDSN() }

// rootConfig is the connection of root to the server at addr, with no database selected.
func rootConfig(addr string) *mysql.Config {
	cfg := mysql.NewConfig()
	cfg.User = "root"
	cfg.Net = "tcp"
	cfg.Addr = addr
	return cfg
}

// stop kills the server and removes its data: nothing it holds outlives the test binary.
func (p *process) stop() {
	p.Kill()
	_ = os.RemoveAll(p.dir)
}

// innodb are the storage settings of both the bootstrap and the server: small files and no
// durability, because a test server's data is thrown away. They make install and start take about
// a second together.
var innodb = []string{
	"--innodb-buffer-pool-size=32M",
	"--innodb-log-file-size=8M",
	"--innodb-doublewrite=0",
	"--innodb-flush-log-at-trx-commit=0",
	"--skip-name-resolve",
	"--character-set-server=utf8mb4",
	"--collation-server=utf8mb4_unicode_ci",
}

// startServer initialises a data directory and starts mariadbd on a free loopback port.
func startServer() (*process, error) {
	server, install, err := binaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sluice-mysqltest-")
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	args := append([]string{"--no-defaults", "--datadir=" + data, "--auth-root-authentication-method=normal",
		"--skip-test-db"}, append(userFlag(), innodb...)...)
	out, err := exec.Command(install, args...).CombinedOutput()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("%s: %w\n%s", install, err, out)
	}
	logPath := filepath.Join(dir, "error.log")
	p, err := testproc.Server{
		Command: func(port int) *exec.Cmd {
			return exec.Command(server, append([]string{"--no-defaults",
				"--datadir=" + data,
				"--socket=" + filepath.Join(dir, "mysqld.sock"),
				"--pid-file=" + filepath.Join(dir, "mysqld.pid"),
				"--log-error=" + logPath,
				"--bind-address=127.0.0.1",
				"--port=" + strconv.Itoa(port),
			}, append(userFlag(), innodb...)...)...)
		},
		Log:          logPath,
		Ready:        ping,
		ReadyTimeout: 30 * time.Second,
	}.Start()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return &process{Process: p, dir: dir}, nil
}

// binaries finds the server and the installer, under their MariaDB names or the MySQL-compatible
// ones.
func binaries() (server, install string, err error) {
	server, err = lookPath("mariadbd", "mysqld")
	if err != nil {
		return "", "", err
	}
	install, err = lookPath("mariadb-install-db", "mysql_install_db")
	return server, install, err
}

func lookPath(names ...string) (string, error) {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
		// Debian puts mariadbd in /usr/sbin, which a non-root PATH may lack.
		if p := filepath.Join("/usr/sbin", n); isExecutable(p) {
			return p, nil
		}
	}
	return "", errors.New(InstallHint)
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// userFlag is --user=root when the tests run as root (mariadbd refuses root without it), else
// nothing: the server runs as whoever runs the tests.
func userFlag() []string {
	if os.Geteuid() == 0 {
		return []string{"--user=root"}
	}
	return nil
}

// ping asks the server at addr for an answer.
func ping(addr string) error {
	connector, err := mysql.NewConnector(rootConfig(addr))
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return db.PingContext(ctx)
}
