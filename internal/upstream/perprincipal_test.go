package upstream

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Close while a new principal's child is still starting: the start used
// to put the child into the map Close had dropped (a panic), and nobody
// stopped it. Now the call fails with CodeClosed and the child is stopped.
// A gate holds the child's start until Close has returned, so the order is
// fixed whatever the machine's load.
func TestPerPrincipalCloseWhileAChildStarts(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gated, started, gate := filepath.Join(dir, "gated"), filepath.Join(dir, "started"), filepath.Join(dir, "gate")
	cfg, _ := childConfig(t, "legacy")
	cfg.Env = append(cfg.Env, "PATH="+os.Getenv("PATH"), "EXE="+exe, "GATED="+gated, "STARTED="+started, "GATE="+gate)
	// Once GATED exists, a start writes its pid to STARTED and waits for GATE.
	cfg.Command, cfg.Args = "/bin/sh", []string{"-c", `if [ -e "$GATED" ]; then echo $$ > "$STARTED.tmp"; mv "$STARTED.tmp" "$STARTED"; while [ ! -e "$GATE" ]; do sleep 0.01; done; fi; exec "$EXE" -test.run='^$'`}
	p, err := NewPerPrincipal(context.Background(), cfg, 4, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			p.Close()
		}
	})
	if err := os.WriteFile(gated, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	type result struct {
		err   error
		panic any
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() { r.panic = recover(); done <- r }()
		_, r.err = p.Call(WithPrincipal(context.Background(), "alice"), toolCall("1", "echo", nil, ""), nil, nil)
	}()
	var pid int
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(started)
		if err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("alice's child never started")
		}
	}
	closed = true
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.panic != nil {
		t.Fatalf("panic: %v", r.panic)
	}
	wantCode(t, r.err, CodeClosed)
	if !processGone(pid, 10*time.Second) {
		t.Fatalf("alice's child %d outlived Close", pid)
	}
}

// A child that is still starting counts against --max-children: with a
// limit of one, a second principal's first call while the first one's
// child starts is refused as busy, not given a second child. (The gate
// of TestPerPrincipalCloseWhileAChildStarts holds the first start.)
func TestPerPrincipalStartingChildrenCount(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gated, started, gate := filepath.Join(dir, "gated"), filepath.Join(dir, "started"), filepath.Join(dir, "gate")
	cfg, _ := childConfig(t, "legacy")
	cfg.Env = append(cfg.Env, "PATH="+os.Getenv("PATH"), "EXE="+exe, "GATED="+gated, "STARTED="+started, "GATE="+gate)
	cfg.Command, cfg.Args = "/bin/sh", []string{"-c", `if [ -e "$GATED" ]; then echo $$ > "$STARTED.tmp"; mv "$STARTED.tmp" "$STARTED"; while [ ! -e "$GATE" ]; do sleep 0.01; done; fi; exec "$EXE" -test.run='^$'`}
	p, err := NewPerPrincipal(context.Background(), cfg, 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if err := os.WriteFile(gated, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	alice := make(chan error, 1)
	go func() {
		_, err := p.Call(WithPrincipal(context.Background(), "alice"), toolCall("1", "echo", nil, ""), nil, nil)
		alice <- err
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("alice's child never started")
		}
	}
	bob := make(chan error, 1)
	go func() {
		_, err := p.Call(WithPrincipal(context.Background(), "bob"), toolCall("2", "echo", nil, ""), nil, nil)
		bob <- err
	}()
	var bobErr error
	select {
	case bobErr = <-bob:
	case <-time.After(3 * time.Second): // bob's child is starting too (behind the gate)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-alice; err != nil {
		t.Fatalf("alice: %v", err)
	}
	if bobErr == nil {
		bobErr = <-bob
	}
	wantCode(t, bobErr, CodeUnavailable)
}
