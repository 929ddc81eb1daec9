package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/mrtr-wasm/mrtr-wasm/host"
)

// runKeygen prints one new k4.local key line, for MRTR_KEYS or a key file.
func runKeygen(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mrtr-wasm keygen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: mrtr-wasm keygen\n\nPrints a new random k4.local key (PASERK) on one line. Put it first in\nMRTR_KEYS or a key file to seal with it; keep the old key after it until\nthe states it sealed have expired.")
	}
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "mrtr-wasm keygen: unexpected argument %q\n", pos[0])
		return exitUsage
	}
	fmt.Fprintln(stdout, host.GenerateKey())
	return exitOK
}
