package main

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/host"
)

// TestHelperCLIProcess is not a test: started by the tests below as a
// process of its own (under another user), it is `mrtr-wasm ARGS`.
func TestHelperCLIProcess(t *testing.T) {
	raw, ok := os.LookupEnv("MRTR_TEST_CLI_ARGS")
	if !ok {
		t.Skip("runs only as a helper process")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		t.Fatal(err)
	}
	os.Exit(run(args, os.Stdout, os.Stderr))
}

const nobody = 65534

// cliAs runs `mrtr-wasm ARGS` as a process of its own: this test binary,
// copied where every user can run it, under cred (nil: root). It returns
// its output, and its exit once it has exited.
func cliAs(t *testing.T, dir string, cred *syscall.Credential, env []string, args ...string) (*syncBuffer, <-chan error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "mrtr-wasm.test")
	if _, err := os.Stat(bin); err != nil {
		copyExecutable(t, self, bin)
	}
	raw, _ := json.Marshal(args)
	cmd := exec.Command(bin, "-test.run=^TestHelperCLIProcess$")
	cmd.Env = append(env, "MRTR_TEST_CLI_ARGS="+string(raw))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done, exited := make(chan struct{}), make(chan error, 1)
	go func() { exited <- cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return out, exited
}

func copyExecutable(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// worldDir is a directory every user can read and enter (t.TempDir is
// private to root), holding the proxy and the hostile child.
func worldDir(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run the proxy and its child as other users")
	}
	dir, err := os.MkdirTemp("", "mrtr-secrets-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	copyExecutable(t, hostileChild(t), filepath.Join(dir, "hostile"))
	return dir
}

// proxyAs starts the proxy in front of the hostile child, as cred, and
// waits for its /healthz.
func proxyAs(t *testing.T, dir string, cred *syscall.Credential, env []string, args ...string) (string, *syncBuffer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	args = append(append([]string{"proxy", "--engine", "native", "--addr", addr, "--log-format", "text"}, args...),
		"--upstream-env", "MRTR_TEST_CHILD=ok", "--", filepath.Join(dir, "hostile"))
	out, exited := cliAs(t, dir, cred, env, args...)
	base := "http://" + addr
	for deadline := time.Now().Add(time.Minute); ; {
		if res, err := http.Get(base + "/healthz"); err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return base, out
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("the proxy exited (%v):\n%s", err, out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxy did not start:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type snooped struct {
	Read   map[string]string `json:"read"`
	UID    int               `json:"uid"`
	GID    int               `json:"gid"`
	Groups []int             `json:"groups"`
}

// snoop asks the child to read its parent's environment and paths.
func snoop(t *testing.T, base string, paths ...string) (snooped, string) {
	t.Helper()
	raw, _ := json.Marshal(map[string]any{"paths": paths})
	r := proxyCall(t, base, "snoop", string(raw), nil)
	if r.Error != nil || r.Result.IsError {
		t.Fatalf("snoop: %+v", r)
	}
	var s snooped
	b, _ := json.Marshal(r.Result.Structured)
	if err := json.Unmarshal(b, &s); err != nil || len(s.Read) != len(paths)+1 {
		t.Fatalf("snoop: %s (%v)", b, err)
	}
	return s, string(b)
}

func refusedRead(t *testing.T, s snooped, path string) {
	t.Helper()
	for f, got := range s.Read {
		if strings.HasSuffix(f, path) && !strings.Contains(got, "permission denied") {
			t.Errorf("the child (uid %d) read %s (%d bytes)", s.UID, f, len(got))
		}
	}
}

// A child of the proxy's own user: the proxy (not root) is not dumpable,
// so the child cannot read MRTR_KEYS from /proc/<ppid>/environ (it read
// it before; unsetting the variable alone would not help, the kernel
// shows the environment the process started with).
func TestStdioChildCannotReadTheProxysEnvironment(t *testing.T) {
	dir := worldDir(t)
	key := host.GenerateKey()
	base, out := proxyAs(t, dir, &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}, []string{"MRTR_KEYS=" + key})
	s, raw := snoop(t, base)
	if s.UID != nobody {
		t.Fatalf("the child runs as uid %d, want %d", s.UID, nobody)
	}
	refusedRead(t, s, "/environ")
	if strings.Contains(raw, key) || strings.Contains(out.String(), key) {
		t.Error("the key reached the child or the log")
	}
	// Not dumpable, the proxy still reads its own /proc for /metrics.
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(b), "\nprocess_open_fds ") {
		t.Errorf("/metrics lacks process_open_fds once the proxy is not dumpable:\n%.2000s", b)
	}
}

// --upstream-user: the proxy runs as root and the child as nobody, with
// no supplementary groups; it can read neither the proxy's environment
// nor its key file.
func TestUpstreamUserKeepsTheChildFromTheKeys(t *testing.T) {
	dir := worldDir(t)
	keyFile := filepath.Join(dir, "keys")
	fileKey, envKey := host.GenerateKey(), host.GenerateKey()
	if err := os.WriteFile(keyFile, []byte(fileKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base, out := proxyAs(t, dir, nil, []string{"MRTR_KEYS=" + envKey}, "--keys", keyFile, "--upstream-user", "65534:65534")
	s, raw := snoop(t, base, keyFile)
	if s.UID != nobody || s.GID != nobody || len(s.Groups) != 0 {
		t.Fatalf("the child runs as uid %d gid %d groups %v, want %d %d []", s.UID, s.GID, s.Groups, nobody, nobody)
	}
	refusedRead(t, s, "/environ")
	refusedRead(t, s, keyFile)
	if strings.Contains(out.String(), "child runs as root") {
		t.Error("warned of a root child that is not root")
	}
	for _, k := range []string{fileKey, envKey} {
		if strings.Contains(raw, k) || strings.Contains(out.String(), k) {
			t.Error("a key reached the child or the log")
		}
	}
}

// A proxy run as root without --upstream-user says that its child runs as
// root too, and how to change that.
func TestRootChildWarned(t *testing.T) {
	dir := worldDir(t)
	base, out := proxyAs(t, dir, nil, []string{"MRTR_KEYS=" + host.GenerateKey()})
	if s, _ := snoop(t, base); s.UID != 0 {
		t.Fatalf("the child runs as uid %d, want 0 (no --upstream-user)", s.UID)
	}
	if l := out.String(); !strings.Contains(l, "child runs as root") || !strings.Contains(l, "--upstream-user") {
		t.Errorf("no warning of a root child:\n%s", l)
	}
}

// --upstream-user needs a proxy run as root, and a user that is not root;
// it is refused at once, with the reason.
func TestUpstreamUserRefused(t *testing.T) {
	dir := worldDir(t)
	for _, c := range []struct {
		cred *syscall.Credential
		user string
		want string
	}{
		{&syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}, "65534", "only a proxy run as root"},
		{nil, "root", "as privileged as the proxy"},
		{nil, "0:65534", "as privileged as the proxy"},
		{nil, "no-such-user-here", `no user "no-such-user-here"`},
		{nil, "65534:no-such-group-here", `no group "no-such-group-here"`},
	} {
		out, exited := cliAs(t, dir, c.cred, nil, "proxy", "--engine", "native", "--addr", "127.0.0.1:0", "--upstream-user", c.user, "--", filepath.Join(dir, "hostile"))
		err := <-exited
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitUsage || !strings.Contains(out.String(), c.want) {
			t.Errorf("--upstream-user %s: want exit %d and %q, got %v:\n%s", c.user, exitUsage, c.want, err, out)
		}
	}
}
