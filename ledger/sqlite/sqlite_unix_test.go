//go:build unix

package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mrtr-wasm/mrtr-wasm/ledger"
	"github.com/mrtr-wasm/mrtr-wasm/ledger/ledgertest"
)

// A ledger file made 0644 (by hand, or an older version under umask 022)
// comes out 0600, and so do the -wal and -shm files SQLite makes beside
// it (SQLite copies the database's mode onto them), which hold the stored
// results too.
func TestExistingLedgerFileMadePrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "ledger.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l, err := ledger.Open(ctx, "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fp := ledgertest.FP("a")
	c := ledgertest.MustClaim(t, l, "op-1", fp, time.Minute, ledger.Acquired)
	if err := l.Finish(ctx, "op-1", c.Token, fp, []byte(`{"ok":true}`), time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %04o, want 0600", filepath.Base(p), fi.Mode().Perm())
		}
	}
	if fi, _ := os.Stat(path + "-wal"); fi.Size() == 0 {
		t.Error("the write did not reach the WAL, so its mode proves nothing")
	}
}
