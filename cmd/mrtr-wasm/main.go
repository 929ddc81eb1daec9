package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/mrtr-wasm/mrtr-wasm/policy"
)

const (
	exitOK       = 0
	exitFindings = 1
	exitUsage    = 2
)

const usage = `mrtr-wasm: the guard between "I need one more answer" and "I act on it".

Usage:
  mrtr-wasm lint [flags] FILE...      lint tool declarations, elicitation params or requestedSchemas
  mrtr-wasm policy test [DIR]         run the policy's Rego tests
  mrtr-wasm policy eval --input FILE  print a policy decision
  mrtr-wasm policy build [DIR] -o F   compile the policy to an OPA Wasm bundle
  mrtr-wasm keygen                    print a new k4.local key
  mrtr-wasm serve [flags]             run the demo MCP server
  mrtr-wasm proxy [flags] --upstream URL | -- CMD ARGS
                                      guard an MCP server you did not write

DIR defaults to the shipped policies (embedded). "mrtr-wasm COMMAND -h"
lists a command's flags. Exit codes: 0 clean, 1 findings at error
severity, 2 usage or unusable input.
`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is the whole command, testable: args without the program name.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "lint":
		return runLint(args, stdout, stderr)
	case "policy":
		return runPolicy(args, stdout, stderr)
	case "keygen":
		return runKeygen(args, stdout, stderr)
	case "serve":
		return runServe(args, stdout, stderr)
	case "proxy":
		return runProxy(args, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "mrtr-wasm: unknown command %q\n\n%s", cmd, usage)
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
