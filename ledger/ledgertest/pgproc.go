package ledgertest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mrtr-wasm/mrtr-wasm/internal/testenv"
)

// PostgresProc is a private PostgreSQL server for crash tests: Debian's
// binaries, a data folder of its own, a free loopback port, no Unix
// socket. Kill stops it with SIGKILL (the postmaster and every backend,
// as a crash would), Start brings it back on the same data and port.
type PostgresProc struct {
	URL  string // postgres://postgres@127.0.0.1:PORT/postgres?sslmode=disable
	bin  string
	dir  string
	port string
	cred *syscall.Credential
	cmd  *exec.Cmd
	log  *os.File
}

// StartPostgres initialises and starts a private PostgreSQL, stopped
// and removed when t ends. Without the binaries it skips t (fails it
// under MRTR_REQUIRE_SERVICES=1). Running as root, the server runs as
// the postgres user (PostgreSQL refuses root).
func StartPostgres(t testing.TB) *PostgresProc {
	t.Helper()
	testenv.Require(t, testenv.PostgresServer)
	dir, err := os.MkdirTemp("", "mrtr-pg-")
	if err != nil {
		t.Fatal(err)
	}
	p := &PostgresProc{bin: testenv.PostgresBin(), dir: dir}
	t.Cleanup(func() {
		p.Kill(t)
		if p.log != nil {
			_ = p.log.Close()
		}
		_ = os.RemoveAll(dir)
	})
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root and there is no postgres user to run PostgreSQL as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(p.bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	p.port = freePort(t)
	p.URL = "postgres://postgres@127.0.0.1:" + p.port + "/postgres?sslmode=disable"
	if p.log, err = os.Create(filepath.Join(dir, "server.log")); err != nil {
		t.Fatal(err)
	}
	p.Start(t)
	return p
}

// Start starts the server on its data folder and waits until it answers
// (after a kill, once crash recovery has run).
func (p *PostgresProc) Start(t testing.TB) {
	t.Helper()
	// fsync=off: these tests kill the server, not the machine; what was
	// written before a kill is in the kernel's cache and survives it.
	cmd := exec.Command(filepath.Join(p.bin, "postgres"), "-D", filepath.Join(p.dir, "data"),
		"-c", "listen_addresses=127.0.0.1", "-p", p.port, "-c", "unix_socket_directories=",
		"-c", "fsync=off", "-c", "max_connections=100")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred, Setpgid: true}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.cmd = cmd
	// Notice an early exit (Wait is Kill's) until the server answers.
	exited, started := make(chan struct{}), make(chan struct{})
	defer close(started)
	go func() {
		for alive(cmd.Process.Pid) {
			select {
			case <-started:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		close(exited)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := pgx.Connect(ctx, p.URL)
		if err == nil {
			_ = c.Close(ctx)
			cancel()
			return
		}
		cancel()
		select {
		case <-exited:
			deadline = time.Now() // it will not come up: say why
		default:
		}
		if !time.Now().Before(deadline) {
			log, _ := os.ReadFile(filepath.Join(p.dir, "server.log"))
			t.Fatalf("PostgreSQL did not start: %v\n%s", err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill stops the server as a crash would: the postmaster and every
// backend at once with SIGKILL. (PostgreSQL puts each backend in a
// process group of its own, so killing the postmaster's group would
// leave them running for a moment: the postmaster is stopped first, so
// it forks no more, and its children are killed one by one.)
func (p *PostgresProc) Kill(t testing.TB) {
	if p.cmd == nil {
		return
	}
	pm := p.cmd.Process.Pid
	_ = syscall.Kill(pm, syscall.SIGSTOP)
	kids := childrenOf(pm)
	_ = syscall.Kill(pm, syscall.SIGKILL)
	for _, k := range kids {
		_ = syscall.Kill(k, syscall.SIGKILL)
	}
	_ = p.cmd.Wait()
	p.cmd = nil
	// A killed backend still in the kernel (a write under load) holds the
	// shared memory, and a new postmaster would refuse to start: wait
	// until every one is gone (or a zombie), for up to 10 s.
	deadline := time.Now().Add(10 * time.Second)
	for _, k := range kids {
		for alive(k) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z'
}

// childrenOf lists the processes whose parent is pid (from /proc).
func childrenOf(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var kids []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after ")".
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		var state string
		var ppid, self int
		if _, err := fmt.Sscan(string(b[i+1:]), &state, &ppid); err != nil || ppid != pid {
			continue
		}
		if _, err := fmt.Sscan(string(b), &self); err == nil {
			kids = append(kids, self)
		}
	}
	return kids
}

// Exec runs statements on the server's postgres database.
func (p *PostgresProc) Exec(t testing.TB, sql ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, p.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	for _, q := range sql {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func freePort(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
}
