//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mrtr-wasm/mrtr-wasm/host"
)

// A --keys or --auth-tokens file that group or others may read stops
// serve before it starts, with the chmod that fixes it (as ssh does).
func TestServeRefusesOpenSecretFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "with space")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	key := host.GenerateKey()
	keys := filepath.Join(dir, "keys")
	tokens := filepath.Join(dir, "tokens.json")
	write := func(p, content string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	write(keys, key+"\n", 0o600)
	write(tokens, `{"`+tokAlice+`":"alice"}`, 0o600)
	for _, tc := range []struct {
		flag, path string
		mode       os.FileMode
	}{
		{"--keys", keys, 0o644},
		{"--keys", keys, 0o640},
		{"--auth-tokens", tokens, 0o604},
		{"--auth-tokens", tokens, 0o620},
	} {
		if err := os.Chmod(tc.path, tc.mode); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		started := false
		code := serve(context.Background(), []string{"--addr", "127.0.0.1:0", "--keys", keys, "--auth-tokens", tokens, "--data", filepath.Join(dir, "data")},
			strings.NewReader(""), &stdout, &stderr, func(string) { started = true })
		msg := stderr.String()
		if code != exitUsage || started {
			t.Fatalf("%s %04o: exit %d, started %v: %s", tc.flag, tc.mode, code, started, msg)
		}
		for _, w := range []string{fmt.Sprintf("%s: permissions %04o", tc.flag, tc.mode), "too open", "chmod 600 '" + tc.path + "'"} {
			if !strings.Contains(msg, w) {
				t.Errorf("%s %04o: the message lacks %q: %s", tc.flag, tc.mode, w, msg)
			}
		}
		if strings.Contains(msg, key) || strings.Contains(msg, tokAlice) {
			t.Errorf("the message shows the secret: %s", msg)
		}
		if _, err := os.Stat(filepath.Join(dir, "data")); err == nil {
			t.Errorf("%s %04o: serve created its data directory before refusing", tc.flag, tc.mode)
		}
		if err := os.Chmod(tc.path, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// 0600 and 0400 pass.
	for _, mode := range []os.FileMode{0o600, 0o400} {
		if err := os.Chmod(keys, mode); err != nil {
			t.Fatal(err)
		}
		if err := checkPrivateFile("--keys", keys); err != nil {
			t.Errorf("%04o: %v", mode, err)
		}
	}
}
