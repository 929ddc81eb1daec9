//go:build unix

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mrtr-wasm/mrtr-wasm/host"
)

// TestKeygenFile: -o writes the key with mode 0600 whatever the umask, and
// never replaces an existing file.
func TestKeygenFile(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	p := filepath.Join(t.TempDir(), "keys")
	code, stdout, stderr := runCLI(t, "keygen", "-o", p)
	if code != exitOK || stdout != "" {
		t.Fatalf("keygen -o: %d %q %q", code, stdout, stderr)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	key, _ := os.ReadFile(p)
	if k, err := host.LoadKeyFile(p); err != nil || k.Len() != 1 {
		t.Fatalf("the written file does not load: %v", err)
	}
	code, _, stderr = runCLI(t, "keygen", "-o", p)
	if code != exitUsage || !strings.Contains(stderr, "already exists") {
		t.Fatalf("second keygen -o: %d %q", code, stderr)
	}
	if again, _ := os.ReadFile(p); !bytes.Equal(again, key) {
		t.Fatal("keygen -o replaced an existing key file")
	}
	if strings.Contains(stderr, strings.TrimSpace(string(key))) {
		t.Fatal("the error shows the existing key")
	}
}
