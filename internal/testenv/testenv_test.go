package testenv

import (
	"net"
	"strings"
	"testing"
)

func TestDialNamesTheAddressNotThePassword(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if why := dial("redis://u:hunter2@"+addr+"/0", "6379", "fix"); why != "" {
		t.Fatalf("a listening port reported missing: %s", why)
	}
	ln.Close()
	why := dial("redis://u:hunter2@"+addr+"/0", "6379", "fix")
	if !strings.Contains(why, addr) || strings.Contains(why, "hunter2") {
		t.Fatalf("closed port: %q", why)
	}
}

func TestRequireSkipsOrFails(t *testing.T) {
	t.Setenv("MRTR_TEST_CHROMIUM", "/nonexistent/chromium")
	mu.Lock()
	delete(probed, Chromium)
	mu.Unlock()
	t.Cleanup(func() { mu.Lock(); delete(probed, Chromium); mu.Unlock() })

	t.Setenv(RequireEnv, "")
	ran := false
	t.Run("skips", func(t *testing.T) {
		Require(t, Chromium)
		ran = true
	})
	if ran {
		t.Fatal("Require did not stop a test whose service is missing")
	}
	// Under MRTR_REQUIRE_SERVICES=1 the same call fails: checked on a
	// fake testing.TB, since a failing subtest would fail this test.
	t.Setenv(RequireEnv, "1")
	f := &fakeTB{TB: t}
	func() {
		defer func() { _ = recover() }()
		Require(f, Chromium)
	}()
	if !f.fatal || f.skip {
		t.Fatalf("fatal %v skip %v", f.fatal, f.skip)
	}
}

type fakeTB struct {
	testing.TB
	fatal, skip bool
}

func (f *fakeTB) Helper()               {}
func (f *fakeTB) Fatalf(string, ...any) { f.fatal = true; panic("fatal") }
func (f *fakeTB) Skipf(string, ...any)  { f.skip = true; panic("skip") }
