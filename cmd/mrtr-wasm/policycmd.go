package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/open-policy-agent/opa/v1/tester"

	"github.com/mrtr-wasm/mrtr-wasm/policy"
)

const policyUsage = `Usage:
  mrtr-wasm policy test [DIR] [--data FILE] [-v]
      Run the Rego tests of the policy directory (as opa test does). Tests
      see the data file at data.mrtr.config and every data/NAME.json at
      data.mrtr.datasets.NAME.
  mrtr-wasm policy eval --input FILE [--policy DIR] [--data FILE] [--decision ask|resume]
      Print the decision for a policy input (policies/README.md documents
      its shape). Exit 0 allowed, 1 denied.
  mrtr-wasm policy build [DIR] -o FILE [--data FILE]
      Compile the policy to OPA's Wasm target: an OPA bundle (tar.gz) with
      /policy.wasm (entrypoints mrtr/ask/decision, mrtr/resume/decision),
      /data.json and /.manifest, for @open-policy-agent/opa-wasm.

DIR defaults to the shipped policies (embedded); the data file to
DIR/data/demo.json.
`

// policyCommands is policy's dispatcher; the top-level usage lists each.
var policyCommands = []command{
	{"test", "[DIR]", "run the policy's Rego tests", runPolicyTest},
	{"eval", "--input FILE", "print a policy decision", runPolicyEval},
	{"build", "[DIR] -o F", "compile the policy to an OPA Wasm bundle", runPolicyBuild},
}

func runPolicy(args []string, stdout, stderr io.Writer) int {
	return dispatch("mrtr-wasm policy", policyCommands, policyUsage, args, stdout, stderr)
}

func policyFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("mrtr-wasm policy "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, policyUsage) }
	return fs
}

// loadPolicy loads DIR (or the shipped policies when dir is empty) with
// an optional data file.
func loadPolicy(ctx context.Context, dir, data string, opts ...policy.Option) (*policy.Engine, error) {
	if data != "" {
		opts = append(opts, policy.WithDataFile(data))
	}
	if dir == "" {
		return policy.Default(ctx, opts...)
	}
	return policy.Load(ctx, dir, opts...)
}

// oneDir reads the optional DIR argument.
func oneDir(pos []string, stderr io.Writer, cmd string) (string, bool) {
	switch len(pos) {
	case 0:
		return "", true
	case 1:
		return pos[0], true
	}
	fmt.Fprintf(stderr, "mrtr-wasm policy %s: one policy directory at most, got %d\n", cmd, len(pos))
	return "", false
}

func runPolicyTest(args []string, stdout, stderr io.Writer) int {
	fs := policyFlags("test", stderr)
	data := fs.String("data", "", "data `FILE` at data.mrtr.config (default DIR/data/demo.json)")
	verbose := fs.Bool("v", false, "list every test")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	dir, ok := oneDir(pos, stderr, "test")
	if !ok {
		return exitUsage
	}
	ctx := context.Background()
	var opts []policy.Option
	if *data != "" {
		opts = append(opts, policy.WithDataFile(*data))
	}
	var results []*policy.TestResult
	if dir == "" {
		results, err = policy.RunDefaultTests(ctx, opts...)
	} else {
		results, err = policy.RunTests(ctx, dir, opts...)
	}
	if err != nil {
		printLoadError(stderr, err)
		return exitUsage
	}
	if len(results) == 0 {
		fmt.Fprintln(stderr, "mrtr-wasm policy test: no tests found (test_* rules in .rego files)")
		return exitUsage
	}
	ch := make(chan *tester.Result, len(results))
	failed := false
	for _, r := range results {
		failed = failed || r.Fail || r.Error != nil
		ch <- r
	}
	close(ch)
	if err := (tester.PrettyReporter{Output: stdout, Verbose: *verbose, FailureLine: true}).Report(ch); err != nil {
		fmt.Fprintln(stderr, "mrtr-wasm policy test: "+err.Error())
		return exitUsage
	}
	if failed {
		return exitFindings
	}
	return exitOK
}

func runPolicyEval(args []string, stdout, stderr io.Writer) int {
	fs := policyFlags("eval", stderr)
	input := fs.String("input", "", "the policy input `FILE` (JSON)")
	dir := fs.String("policy", "", "the policy `DIR` (default: the shipped policies)")
	data := fs.String("data", "", "the data `FILE` (default DIR/data/demo.json)")
	decision := fs.String("decision", "ask", "which decision: ask or resume")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "mrtr-wasm policy eval: unexpected argument %q (the input goes in --input)\n", pos[0])
		return exitUsage
	}
	if *input == "" {
		fmt.Fprintln(stderr, "mrtr-wasm policy eval: --input FILE is required")
		return exitUsage
	}
	entry := map[string]string{"ask": policy.AskEntrypoint, "resume": policy.ResumeEntrypoint}[*decision]
	if entry == "" {
		fmt.Fprintf(stderr, "mrtr-wasm policy eval: --decision must be ask or resume, not %q\n", *decision)
		return exitUsage
	}
	raw, err := os.ReadFile(*input)
	if err != nil {
		fmt.Fprintf(stderr, "%s: cannot read: %v\n", *input, unwrapPath(err))
		return exitUsage
	}
	if _, err := policy.IndexJSON(raw); err != nil {
		fmt.Fprintf(stderr, "%s:%v\n", *input, err)
		return exitUsage
	}
	if !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		fmt.Fprintf(stderr, "%s: the policy input must be a JSON object\n", *input)
		return exitUsage
	}
	ctx := context.Background()
	e, err := loadPolicy(ctx, *dir, *data)
	if err != nil {
		printLoadError(stderr, err)
		return exitUsage
	}
	d, err := e.Eval(ctx, entry, raw)
	if err != nil {
		fmt.Fprintln(stderr, "mrtr-wasm policy eval: "+err.Error())
		return exitUsage
	}
	out, _ := json.MarshalIndent(d, "", "  ")
	fmt.Fprintln(stdout, string(out))
	if !d.Allow {
		return exitFindings
	}
	return exitOK
}

func runPolicyBuild(args []string, stdout, stderr io.Writer) int {
	fs := policyFlags("build", stderr)
	out := fs.String("o", "", "write the bundle to `FILE` (tar.gz)")
	data := fs.String("data", "", "the data `FILE` to put in the bundle (default DIR/data/demo.json)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return flagExit(err)
	}
	dir, ok := oneDir(pos, stderr, "build")
	if !ok {
		return exitUsage
	}
	if *out == "" {
		fmt.Fprintln(stderr, "mrtr-wasm policy build: -o FILE is required")
		return exitUsage
	}
	ctx := context.Background()
	e, err := loadPolicy(ctx, dir, *data)
	if err != nil {
		printLoadError(stderr, err)
		return exitUsage
	}
	var buf bytes.Buffer
	if err := e.WriteBundle(ctx, &buf); err != nil {
		fmt.Fprintln(stderr, "mrtr-wasm policy build: "+err.Error())
		return exitUsage
	}
	// Write beside the target and rename, so a reader never sees half a
	// bundle.
	tmp, err := os.CreateTemp(filepath.Dir(*out), ".bundle-*.tar.gz")
	if err == nil {
		_, err = tmp.Write(buf.Bytes())
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), *out)
		}
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "mrtr-wasm policy build: writing %s: %v\n", *out, unwrapPath(err))
		return exitUsage
	}
	info := e.Info()
	fmt.Fprintf(stdout, "wrote %s (%d bytes): policy.wasm with entrypoints %s and %s, data from %s, revision %s\n",
		*out, buf.Len(), policy.AskEntrypoint, policy.ResumeEntrypoint, info.DataFile, info.Revision)
	return exitOK
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
