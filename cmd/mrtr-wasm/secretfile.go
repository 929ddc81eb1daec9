package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strings"

	"github.com/mrtr-wasm/mrtr-wasm/internal/privatefile"
)

// writeNewSecretFile creates path with mode 0600 and writes b, refusing
// to replace an existing file (a key lost that way cannot be recovered).
func writeNewSecretFile(path string, b []byte) error {
	err := privatefile.WriteNew(path, b)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s already exists; keygen never overwrites a key file (remove it first, or choose another name)", path)
	}
	return err
}

// checkPrivateFile refuses a file of secrets (--keys, --auth-tokens) that
// group or others may access, the way ssh refuses such a private key:
// whoever can read it can seal states or act as any principal. Windows
// has no such mode bits to check.
func checkPrivateFile(flagName, path string) error {
	if path == "" || runtime.GOOS == "windows" {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%s: %w", flagName, err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%s: permissions %04o for %q are too open: it holds secrets, so it must not be accessible by group or others; fix with: chmod 600 %s", flagName, perm, path, shellQuote(path))
	}
	return nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '/' || r == '.' || r == '_' || r == '-' || r == '+' || r == ':' || r == '@' || r == ',') {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}
