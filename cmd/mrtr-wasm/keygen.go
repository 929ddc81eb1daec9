package main

import (
	"flag"
	"fmt"
	"io"

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
