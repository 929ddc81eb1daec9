package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/mrtr-wasm/mrtr-wasm/internal/audit"
)

var auditCommands = []command{
	{"verify", "[--head HASH] FILE...", "check an audit log's hash chain (files oldest first)", runAuditVerify},
}

const auditUsage = `Usage:
  mrtr-wasm audit verify [--head HASH] FILE...

Checks that the files (a log written by --audit, and the files it was
rotated to, oldest first) are one unbroken hash chain, and names the first
record that does not fit. --head is the hash the writer last reported:
without it, records cut from the end of the newest file go unseen.
Exit codes: 0 the chain holds, 1 it does not, 2 usage or unreadable file.
`

func runAudit(args []string, stdout, stderr io.Writer) int {
	return dispatch("mrtr-wasm audit", auditCommands, auditUsage, args, stdout, stderr)
}

func runAuditVerify(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mrtr-wasm audit verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, auditUsage) }
	head := fs.String("head", "", "the chain's last `HASH`, as the writer last reported it")
	files, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(files) == 0 {
		fmt.Fprint(stderr, auditUsage)
		return exitUsage
	}
	s, err := audit.Verify(files...)
	var br *audit.Break
	switch {
	case errors.As(err, &br):
		fmt.Fprintf(stdout, "%s\n", br)
		return exitFindings
	case err != nil:
		fmt.Fprintln(stderr, "mrtr-wasm audit verify:", err)
		return exitUsage
	}
	if *head != "" && *head != s.Head {
		fmt.Fprintf(stdout, "the chain holds up to record %d, but its head %s is not %s: records were cut from the end\n", s.Seq, s.Head, *head)
		return exitFindings
	}
	fmt.Fprintf(stdout, "ok: %d records, the chain holds; head %d %s\n", s.Records, s.Seq, s.Head)
	return exitOK
}
