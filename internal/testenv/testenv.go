package testenv

import (
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// The services Require knows.
const (
	Redis       = "redis"        // a Redis server at RedisURL
	RedisServer = "redis-server" // the binary, for tests that start their own
	Postgres    = "postgres"     // a PostgreSQL server at PostgresURL
	// PostgresServer: Debian's PostgreSQL binaries (initdb, postgres), for
	// tests that start their own server (see PostgresBin).
	PostgresServer = "postgres-server"
	Chromium       = "chromium" // a headless Chromium at ChromiumPath
)

// RequireEnv turns every skip into a failure when set to 1.
const RequireEnv = "MRTR_REQUIRE_SERVICES"

// RedisURL is the Redis the tests use: MRTR_TEST_REDIS, or Debian's
// redis-server on 127.0.0.1.
func RedisURL() string {
	if u := os.Getenv("MRTR_TEST_REDIS"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// PostgresURL is the PostgreSQL the tests use: MRTR_TEST_POSTGRES, or a
// trust-auth server on 127.0.0.1 with a database "test".
func PostgresURL() string {
	if u := os.Getenv("MRTR_TEST_POSTGRES"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// PostgresBin is the folder of Debian's PostgreSQL binaries (the newest
// under /usr/lib/postgresql), or "" when there is none.
func PostgresBin() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "postgres")); err == nil {
			return dirs[i]
		}
	}
	return ""
}

// ChromiumPath is the browser the tests drive: MRTR_TEST_CHROMIUM, or
// Debian's /usr/bin/chromium.
func ChromiumPath() string {
	if p := os.Getenv("MRTR_TEST_CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

var (
	mu     sync.Mutex
	probed = map[string]string{} // service -> "" (present) or why not
)

// Require skips t, with one line naming the missing service, unless
// service answers; under MRTR_REQUIRE_SERVICES=1 it fails t instead.
func Require(t testing.TB, service string) {
	t.Helper()
	mu.Lock()
	why, ok := probed[service]
	if !ok {
		why = probe(service)
		probed[service] = why
	}
	mu.Unlock()
	if why == "" {
		return
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("testenv: %s is missing (%s); %s=1 makes this a failure", service, why, RequireEnv)
	}
	t.Skipf("testenv: skipped: %s is missing (%s)", service, why)
}

func probe(service string) string {
	switch service {
	case Redis:
		return dial(RedisURL(), "6379", "set MRTR_TEST_REDIS or start redis-server")
	case Postgres:
		return dial(PostgresURL(), "5432", "set MRTR_TEST_POSTGRES or start PostgreSQL")
	case RedisServer:
		if _, err := exec.LookPath("redis-server"); err != nil {
			return "no redis-server in PATH; install Debian's redis-server"
		}
		return ""
	case PostgresServer:
		if PostgresBin() == "" {
			return "no /usr/lib/postgresql/*/bin/postgres; install Debian's postgresql"
		}
		return ""
	case Chromium:
		if _, err := os.Stat(ChromiumPath()); err != nil {
			return "no browser at " + ChromiumPath() + "; install Debian's chromium or set MRTR_TEST_CHROMIUM"
		}
		return ""
	}
	return "testenv does not know this service"
}

// dial checks that something listens where the URL points. The URL may
// hold a password: only its host and port are shown.
func dial(setting, defaultPort, fix string) string {
	u, err := url.Parse(setting)
	if err != nil || u.Hostname() == "" {
		return "its URL does not parse; " + fix
	}
	addr := net.JoinHostPort(u.Hostname(), cmp(u.Port(), defaultPort))
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "nothing answers at " + addr + "; " + fix
	}
	_ = c.Close()
	return ""
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// RequireFile skips t, with one line naming what is missing and how to
// get it, unless path exists (npm packages the Go tests read, such as the
// SARIF schema in e2e/node_modules); under MRTR_REQUIRE_SERVICES=1 it
// fails t instead.
func RequireFile(t testing.TB, what, path, fix string) {
	t.Helper()
	if _, err := os.Stat(path); err == nil {
		return
	}
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("testenv: %s is missing (no %s; %s); %s=1 makes this a failure", what, path, fix, RequireEnv)
	}
	t.Skipf("testenv: skipped: %s is missing (no %s; %s)", what, path, fix)
}
