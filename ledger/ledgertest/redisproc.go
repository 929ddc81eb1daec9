package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mrtr-wasm/mrtr-wasm/internal/testenv"
)

// RedisProc is a redis-server of a test's own: a temporary folder, a free
// loopback port, never the shared 127.0.0.1:6379. Kill stops it with
// SIGKILL; Start runs it again with the same folder, port and arguments.
type RedisProc struct {
	Port int
	Dir  string
	args []string
	cmd  *exec.Cmd
}

// startupWait bounds how long a server may take to answer PING: the
// machines that run these tests are shared and often loaded.
const startupWait = 20 * time.Second

// StartRedis starts redis-server with extra configuration (pairs such as
// "--appendonly", "yes"). Without the binary it skips t (fails it under
// MRTR_REQUIRE_SERVICES=1). The server is killed when t ends.
func StartRedis(t testing.TB, extra ...string) *RedisProc {
	t.Helper()
	testenv.Require(t, testenv.RedisServer)
	p := &RedisProc{Port: FreePort(t), Dir: t.TempDir()}
	p.args = append([]string{"--port", strconv.Itoa(p.Port), "--bind", "127.0.0.1", "--dir", p.Dir,
		"--daemonize", "no", "--logfile", filepath.Join(p.Dir, "redis.log"), "--save", "", "--appendonly", "no",
		// Replicas sync at once rather than after Redis's 5 s default.
		"--repl-diskless-sync-delay", "0"}, extra...)
	p.Start(t)
	t.Cleanup(p.Kill)
	return p
}

// Addr is host:port.
func (p *RedisProc) Addr() string { return "127.0.0.1:" + strconv.Itoa(p.Port) }

// URL is the redis:// URL of database 0.
func (p *RedisProc) URL() string { return "redis://" + p.Addr() + "/0" }

// Start runs the server (again) and waits until it answers PING.
func (p *RedisProc) Start(t testing.TB) {
	t.Helper()
	p.start(t, "redis-server", p.args...)
}

func (p *RedisProc) start(t testing.TB, bin string, args ...string) {
	t.Helper()
	p.cmd = exec.Command(bin, args...)
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := WaitPing(p.Addr(), startupWait); err != nil {
		p.Kill()
		t.Fatalf("%s on %s did not start: %v; log:\n%s", bin, p.Addr(), err, p.LogTail())
	}
}

// Kill sends SIGKILL (no shutdown save) and waits for the process.
func (p *RedisProc) Kill() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
	p.cmd = nil
}

// Running reports whether the process was started and not killed.
func (p *RedisProc) Running() bool { return p.cmd != nil }

// LogTail is the end of the server's log, for failure messages.
func (p *RedisProc) LogTail() string {
	b, _ := os.ReadFile(filepath.Join(p.Dir, "redis.log"))
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// Do runs one command on the server with a client of its own.
func (p *RedisProc) Do(ctx context.Context, args ...any) (any, error) {
	c := goredis.NewClient(&goredis.Options{Addr: p.Addr(), Protocol: 2, DisableIdentity: true, MaxRetries: -1})
	defer c.Close()
	return c.Do(ctx, args...).Result()
}

// WaitPing polls addr until it answers PING (a sentinel answers it too).
func WaitPing(addr string, within time.Duration) error {
	c := goredis.NewClient(&goredis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// FreePort is a loopback TCP port nothing listens on (it may be taken
// before the caller binds it; rare enough for tests).
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// StartReplica starts a redis-server that replicates master.
func StartReplica(t testing.TB, master *RedisProc, extra ...string) *RedisProc {
	t.Helper()
	r := StartRedis(t, append([]string{"--replicaof", "127.0.0.1", strconv.Itoa(master.Port)}, extra...)...)
	if err := WaitFor(startupWait, r.LinkUp); err != nil {
		t.Fatalf("the replica on %s did not sync with %s; log:\n%s", r.Addr(), master.Addr(), r.LogTail())
	}
	return r
}

// LinkUp reports whether the server is a replica in sync with its master.
func (p *RedisProc) LinkUp() bool {
	v, err := p.Do(context.Background(), "INFO", "replication")
	s, _ := v.(string)
	return err == nil && strings.Contains(s, "master_link_status:up")
}

// RedisCluster is a Redis Cluster of a test's own: masters, each with
// its replicas.
type RedisCluster struct {
	Nodes []*RedisProc
}

// StartCluster starts masters*(1+replicas) cluster nodes and joins them
// with redis-cli --cluster create, then waits until every node reports
// cluster_state:ok. nodeTimeout is cluster-node-timeout: how long a
// silent master takes to be failed over.
func StartCluster(t testing.TB, masters, replicas int, nodeTimeout time.Duration, extra ...string) *RedisCluster {
	t.Helper()
	testenv.Require(t, testenv.RedisServer)
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		cli = "redis-cli in PATH"
	}
	testenv.RequireFile(t, "redis-cli", cli, "install Debian's redis-tools")
	c := &RedisCluster{}
	create := []string{"--cluster", "create"}
	for i := 0; i < masters*(1+replicas); i++ {
		n := StartRedis(t, append([]string{"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(FreePort(t)),
			"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", strconv.FormatInt(nodeTimeout.Milliseconds(), 10)}, extra...)...)
		c.Nodes = append(c.Nodes, n)
		create = append(create, n.Addr())
	}
	create = append(create, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "redis-cli", create...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	if err := c.WaitOK(60 * time.Second); err != nil {
		t.Fatal(err)
	}
	// A replica that never synced cannot be promoted.
	for _, n := range c.Nodes {
		if err := WaitFor(startupWait, func() bool { r := n.Role(); return r == "master" || n.LinkUp() }); err != nil {
			t.Fatalf("the replica on %s did not sync; log:\n%s", n.Addr(), n.LogTail())
		}
	}
	return c
}

// URL is the redis+cluster:// URL with every node as a seed.
func (c *RedisCluster) URL() string {
	u := "redis+cluster://" + c.Nodes[0].Addr() + "?"
	for _, n := range c.Nodes[1:] {
		u += "addr=" + n.Addr() + "&"
	}
	return strings.TrimSuffix(u, "&")
}

// WaitOK waits until every running node reports cluster_state:ok and
// every slot is served.
func (c *RedisCluster) WaitOK(within time.Duration) error {
	return WaitFor(within, func() bool {
		for _, n := range c.Nodes {
			if !n.Running() {
				continue
			}
			v, err := n.Do(context.Background(), "CLUSTER", "INFO")
			s, _ := v.(string)
			if err != nil || !strings.Contains(s, "cluster_state:ok") || !strings.Contains(s, "cluster_slots_ok:16384") {
				return false
			}
		}
		return true
	})
}

// Role is the node's role as it reports it: "master" or "slave".
func (p *RedisProc) Role() string {
	v, err := p.Do(context.Background(), "ROLE")
	if a, ok := v.([]any); err == nil && ok && len(a) > 0 {
		s, _ := a[0].(string)
		return s
	}
	return ""
}

// MasterOf is the running master that serves key's slot.
func (c *RedisCluster) MasterOf(key string) *RedisProc {
	for _, n := range c.Nodes {
		if !n.Running() || n.Role() != "master" {
			continue
		}
		// A master answers GET for its own slots, MOVED for others'.
		if _, err := n.Do(context.Background(), "GET", key); err == nil || errors.Is(err, goredis.Nil) {
			return n
		}
	}
	return nil
}

// Sentinels is a master, its replicas and the sentinels that watch them.
type Sentinels struct {
	Master   *RedisProc
	Replicas []*RedisProc
	Watchers []*RedisProc
	Name     string
}

// StartSentinels starts a master with replicas and n sentinels
// (redis-server --sentinel) with a quorum of n/2+1, watching it under
// the name "mymaster"; downAfter is how long a silent master takes to be
// failed over.
func StartSentinels(t testing.TB, replicas, n int, downAfter time.Duration, extra ...string) *Sentinels {
	t.Helper()
	s := &Sentinels{Master: StartRedis(t, extra...), Name: "mymaster"}
	for i := 0; i < replicas; i++ {
		s.Replicas = append(s.Replicas, StartReplica(t, s.Master, extra...))
	}
	for i := 0; i < n; i++ {
		p := &RedisProc{Port: FreePort(t), Dir: t.TempDir()}
		conf := filepath.Join(p.Dir, "sentinel.conf")
		text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\nsentinel resolve-hostnames no\n"+
			"sentinel monitor %s 127.0.0.1 %d %d\nsentinel down-after-milliseconds %s %d\n"+
			"sentinel failover-timeout %s %d\nsentinel parallel-syncs %s 1\n",
			p.Port, p.Dir, filepath.Join(p.Dir, "redis.log"), s.Name, s.Master.Port, n/2+1,
			s.Name, downAfter.Milliseconds(), s.Name, 4*downAfter.Milliseconds(), s.Name)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		p.args = []string{conf, "--sentinel"}
		p.start(t, "redis-server", p.args...)
		t.Cleanup(p.Kill)
		s.Watchers = append(s.Watchers, p)
	}
	// Wait until every sentinel knows the replicas and the others.
	if err := WaitFor(startupWait, func() bool {
		for _, w := range s.Watchers {
			v, err := w.Do(context.Background(), "SENTINEL", "MASTER", s.Name)
			if err != nil {
				return false
			}
			m := pairs(v)
			if m["num-slaves"] != strconv.Itoa(replicas) || m["num-other-sentinels"] != strconv.Itoa(n-1) {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatalf("the sentinels did not discover each other and the replicas; log:\n%s", s.Watchers[0].LogTail())
	}
	return s
}

// URL is the redis+sentinel:// URL naming every sentinel.
func (s *Sentinels) URL() string {
	u := "redis+sentinel://" + s.Watchers[0].Addr() + "/0?master_name=" + s.Name
	for _, w := range s.Watchers[1:] {
		u += "&addr=" + w.Addr()
	}
	return u
}

// MasterAddr is the master's address as the first answering sentinel
// reports it.
func (s *Sentinels) MasterAddr() string {
	for _, w := range s.Watchers {
		v, err := w.Do(context.Background(), "SENTINEL", "GET-MASTER-ADDR-BY-NAME", s.Name)
		if a, ok := v.([]any); err == nil && ok && len(a) == 2 {
			return fmt.Sprintf("%v:%v", a[0], a[1])
		}
	}
	return ""
}

// pairs reads a flat [k1 v1 k2 v2 …] reply.
func pairs(v any) map[string]string {
	m := map[string]string{}
	a, _ := v.([]any)
	for i := 0; i+1 < len(a); i += 2 {
		m[fmt.Sprint(a[i])] = fmt.Sprint(a[i+1])
	}
	return m
}

// WaitFor polls ok every 50 ms until it holds, at most within.
func WaitFor(within time.Duration, ok func() bool) error {
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v", within)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}
