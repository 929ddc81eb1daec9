package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mrtr-wasm/mrtr-wasm/policy"
)

const (
	exitOK       = 0
	exitFindings = 1
	exitUsage    = 2
)

// command is one subcommand: its name, what its usage line shows after
// the name, a one-line summary, and the function that runs it. The usage
// text is made from this table, so it cannot leave a command out.
type command struct {
	name, args, summary string
	run                 func(args []string, stdout, stderr io.Writer) int
}

// commands is the dispatcher, in the order usage lists them. A command
// with subcommands (policy) lists each of them instead of itself.
var commands = []command{
	{"serve", "[flags]", "run the MCP server with the guard and the demo tools", runServe},
	{"proxy", "[flags] --upstream URL | -- CMD ARGS", "guard an MCP server you did not write", runProxy},
	{"lint", "[flags] FILE...", "lint tool declarations, elicitation params or requestedSchemas", runLint},
	{"policy", "", "", runPolicy},
	{"keygen", "[-o FILE]", "make a new k4.local key (stdout, or FILE written 0600)", runKeygen},
	{"audit", "", "", runAudit},
}

const usageTail = `
DIR defaults to the shipped policies (embedded). "mrtr-wasm COMMAND -h"
lists a command's flags. Exit codes: 0 clean, 1 findings at error
severity, 2 usage or unusable input.
`

// usageText lists every command of the dispatcher, and every subcommand
// of those that have some.
func usageText() string {
	type line struct{ left, summary string }
	var lines []line
	for _, c := range commands {
		subs := subcommands[c.name]
		if subs == nil {
			subs = []command{{args: c.args, summary: c.summary}}
		}
		for _, s := range subs {
			left := strings.TrimSpace(strings.Join([]string{"mrtr-wasm", c.name, s.name, s.args}, " "))
			lines = append(lines, line{strings.Join(strings.Fields(left), " "), s.summary})
		}
	}
	width := 0
	for _, l := range lines {
		width = max(width, len(l.left))
	}
	var b strings.Builder
	b.WriteString("mrtr-wasm: the guard between \"I need one more answer\" and \"I act on it\".\n\nUsage:\n")
	for _, l := range lines {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, l.left, l.summary)
	}
	b.WriteString(usageTail)
	return b.String()
}

// subcommands are the second-level dispatchers, by command name.
var subcommands = map[string][]command{"policy": policyCommands, "audit": auditCommands}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is the whole command, testable: args without the program name.
func run(args []string, stdout, stderr io.Writer) int {
	return dispatch("mrtr-wasm", commands, usageText(), args, stdout, stderr)
}

// dispatch runs the command of table that args name, or prints usage.
func dispatch(prog string, table []command, usage string, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	name, args := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	for _, c := range table {
		if c.name == name {
			return c.run(args, stdout, stderr)
		}
	}
	what := "command"
	if prog != "mrtr-wasm" {
		what = "subcommand"
	}
	fmt.Fprintf(stderr, "%s: unknown %s %q\n\n%s", prog, what, name, usage)
	return exitUsage
}

// parseFlags parses flags anywhere among the positional arguments (the
// standard flag package stops at the first one), up to a "--".
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for i, a := range args {
		if a == "--" {
			rest = args[i+1:]
			args = args[:i]
			break
		}
	}
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	return append(pos, rest...), nil
}

// flagExit is the exit code for a flag parsing error (-h is not one).
func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}

// printLoadError prints why a policy, data or input file cannot be used:
// one "FILE:LINE: message" per problem.
func printLoadError(stderr io.Writer, err error) {
	if es, ok := policy.AsLoadErrors(err); ok {
		for _, e := range es {
			fmt.Fprintln(stderr, e.Error())
		}
		return
	}
	fmt.Fprintln(stderr, "mrtr-wasm: "+err.Error())
}
