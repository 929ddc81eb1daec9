package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/mrtr-wasm/mrtr-wasm/host"
)

const keygenUsage = `Usage: mrtr-wasm keygen [-o FILE]

Makes a new random k4.local key (PASERK) on one line: on stdout, or in
FILE, created with mode 0600 (an existing FILE is never overwritten). Put
it first in MRTR_KEYS or a key file to seal with it; keep the old key after
it until the states it sealed have expired.
`

// runKeygen prints one new k4.local key line, or writes it to -o FILE.
func runKeygen(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mrtr-wasm keygen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, keygenUsage) }
	out := fs.String("o", "", "write the key to this new file (mode 0600) instead of stdout")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "mrtr-wasm keygen: unexpected argument %q\n", pos[0])
		return exitUsage
	}
	line := host.GenerateKey() + "\n"
	if *out == "" {
		fmt.Fprint(stdout, line)
		return exitOK
	}
	if err := writeNewSecretFile(*out, []byte(line)); err != nil {
		fmt.Fprintln(stderr, "mrtr-wasm keygen:", err)
		return exitUsage
	}
	return exitOK
}

// writeNewSecretFile creates path with mode 0600 and writes b, refusing
// to replace an existing file (a key lost that way cannot be recovered).
// The mode is set at creation, so the key is never readable by others,
// whatever the umask.
func writeNewSecretFile(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s already exists; keygen never overwrites a key file (remove it first, or choose another name)", path)
	}
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
