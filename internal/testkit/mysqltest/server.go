package mysqltest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

// process is one mariadbd started for the tests, with its data in dir.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
	dir    string
	port   int
}

// DSN is a go-sql-driver DSN for root on the server, with no database selected.
func (p *process) DSN() string {
	cfg := mysql.NewConfig()
	cfg.User = "root"
	cfg.Net = "tcp"
	cfg.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port))
	return cfg.FormatDSN()
}

// stop kills the server and removes its data: nothing it holds outlives the test binary.
func (p *process) stop() {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
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

// startServer initialises a data directory and starts mariadbd on a free loopback port. It retries
// a few times: a free port can be taken between the probe and the bind.
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
	var lastErr error
	for range 5 {
		p, err := tryStart(server, dir)
		if err == nil {
			return p, nil
		}
		lastErr = err
	}
	_ = os.RemoveAll(dir)
	return nil, lastErr
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

func tryStart(bin, dir string) (*process, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "error.log")
	args := append([]string{"--no-defaults",
		"--datadir=" + filepath.Join(dir, "data"),
		"--socket=" + filepath.Join(dir, "mysqld.sock"),
		"--pid-file=" + filepath.Join(dir, "mysqld.pid"),
		"--log-error=" + logPath,
		"--bind-address=127.0.0.1",
		"--port=" + strconv.Itoa(port),
	}, append(userFlag(), innodb...)...)
	cmd := exec.Command(bin, args...)
	// The server dies with the test binary even when TestMain never gets to stop it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{}), dir: dir, port: port}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	if err := p.waitReady(30 * time.Second); err != nil {
		_ = cmd.Process.Kill()
		<-p.exited
		log, _ := os.ReadFile(logPath)
		_ = os.Remove(logPath)
		return nil, fmt.Errorf("mariadbd on port %d did not start: %w\n%s", port, err, log)
	}
	return p, nil
}

// waitReady pings the server until it answers, it exits, or the timeout passes.
func (p *process) waitReady(timeout time.Duration) error {
	connector, err := mysql.NewConnector(mustParse(p.DSN()))
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := db.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			return errors.New("the server exited")
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return err
		}
	}
}

func mustParse(dsn string) *mysql.Config {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		panic(err) // our own DSN
	}
	return cfg
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
