package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/mrtr-wasm/mrtr-wasm/internal/testenv"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

type lintOutput struct {
	Findings []map[string]any `json:"findings"`
}

func lintJSON(t *testing.T, args ...string) (int, lintOutput, string) {
	t.Helper()
	code, stdout, stderr := runCLI(t, append([]string{"lint", "--format", "json"}, args...)...)
	var out lintOutput
	if code != exitUsage {
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("not JSON: %v\n%s\n%s", err, stdout, stderr)
		}
	}
	return code, out, stderr
}

// summary lists findings as "line code tool/key/field".
func summary(fs []map[string]any) []string {
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%v %v %v/%v/%v", f["line"], f["code"], f["tool"], f["key"], f["field"]))
	}
	sort.Strings(out)
	return out
}

func TestLintCleanFile(t *testing.T) {
	for _, engine := range []string{"wasm", "native"} {
		code, stdout, stderr := runCLI(t, "lint", "--engine", engine, "testdata/tools/demo.json")
		if code != exitOK || stdout != "" || stderr != "" {
			t.Errorf("%s: exit %d, %q %q", engine, code, stdout, stderr)
		}
	}
}

// risky.json's findings, by line, as every engine must report them.
var riskyFindings = []string{
	"16 policy.field_not_allowed book_demo_call/contact/phone",
	"17 mrtr.form.secret_field book_demo_call/contact/password",
	"17 policy.class_forbidden book_demo_call/contact/password",
	"27 policy.kind_not_allowed list_bookings/filter/",
	"47 policy.url_host_not_allowed connect_calendar/calendar/",
	"47 policy.url_path_not_allowed connect_calendar/calendar/",
}

func TestLintFindings(t *testing.T) {
	for _, engine := range []string{"wasm", "native"} {
		code, out, stderr := lintJSON(t, "--engine", engine, "testdata/tools/risky.json")
		if code != exitFindings {
			t.Fatalf("%s: exit %d: %s", engine, code, stderr)
		}
		got := summary(out.Findings)
		if strings.Join(got, "\n") != strings.Join(riskyFindings, "\n") {
			t.Errorf("%s: findings\n%s\nwant\n%s", engine, strings.Join(got, "\n"), strings.Join(riskyFindings, "\n"))
		}
		for _, f := range out.Findings {
			for _, k := range []string{"file", "code", "severity", "tool", "field", "message"} {
				if _, ok := f[k]; !ok {
					t.Errorf("finding without %s: %v", k, f)
				}
			}
			if f["file"] != "testdata/tools/risky.json" || f["severity"] != "error" || f["message"] == "" {
				t.Errorf("finding %v", f)
			}
			if f["code"] == "mrtr.form.secret_field" && !strings.Contains(f["message"].(string), `"password"`) {
				t.Errorf("the secret finding does not name the field: %v", f)
			}
			if strings.HasPrefix(f["code"].(string), "policy.") && f["rule"] == nil {
				t.Errorf("a policy finding without its rule: %v", f)
			}
		}
	}
	// Text: one line per finding, FILE:LINE first.
	code, stdout, stderr := runCLI(t, "lint", "testdata/tools/risky.json")
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != exitFindings || len(lines) != len(riskyFindings) || !strings.HasPrefix(lines[1], "testdata/tools/risky.json:17: error mrtr.form.secret_field [tool book_demo_call, input contact, field password]: ") {
		t.Errorf("text: %d\n%s", code, stdout)
	}
	if !strings.Contains(stderr, "6 error(s), 0 warning(s)") {
		t.Errorf("summary %q", stderr)
	}
	// Without the policy only the core's finding is left.
	code, out, _ := lintJSON(t, "--no-policy", "testdata/tools/risky.json")
	if got := summary(out.Findings); code != exitFindings || len(got) != 1 || got[0] != riskyFindings[1] {
		t.Errorf("--no-policy: %d %v", code, got)
	}
	// A stricter deployment finds more in the demo tools.
	code, out, _ = lintJSON(t, "--data", "policies/data/strict.json", "testdata/tools/demo.json")
	if got := summary(out.Findings); code != exitFindings || len(got) != 1 || got[0] != "58 policy.url_host_not_allowed connect_calendar/calendar/" {
		t.Errorf("strict: %d %v", code, got)
	}
}

func TestLintBareInputs(t *testing.T) {
	schema := `{
  "type": "object",
  "properties": {
    "email": {"type": "string", "format": "email"},
    "apiKey": {"type": "string", "title": "API key"}
  }
}`
	params := `{"mode": "form", "message": "Connect", "requestedSchema": ` + schema + `}`
	request := `{"method": "elicitation/create", "params": ` + params + `}`
	for name, tc := range map[string]struct {
		content string
		line    float64
	}{
		"schema":  {schema, 5},
		"params":  {params, 5},
		"request": {request, 5},
	} {
		p := writeFile(t, name+".json", tc.content)
		code, out, stderr := lintJSON(t, p)
		if code != exitFindings {
			t.Fatalf("%s: exit %d %s", name, code, stderr)
		}
		var secret map[string]any
		for _, f := range out.Findings {
			if f["code"] == "mrtr.form.secret_field" {
				secret = f
			}
		}
		if secret == nil || secret["field"] != "apiKey" || secret["line"] != tc.line || secret["tool"] != "" {
			t.Errorf("%s: %v", name, out.Findings)
		}
	}
	// --tool names the tool the policy judges: connect_calendar may not
	// use forms at all.
	p := writeFile(t, "p.json", params)
	_, out, _ := lintJSON(t, "--tool", "connect_calendar", p)
	found := false
	for _, f := range out.Findings {
		found = found || (f["code"] == "policy.kind_not_allowed" && f["tool"] == "connect_calendar")
	}
	if !found {
		t.Errorf("--tool: %v", out.Findings)
	}
	// A clean bare schema.
	clean := writeFile(t, "clean.json", `{"type":"object","properties":{"name":{"type":"string"}}}`)
	if code, stdout, stderr := runCLI(t, "lint", clean); code != exitOK || stdout != "" {
		t.Errorf("clean schema: %d %q %q", code, stdout, stderr)
	}
}

func TestLintSARIF(t *testing.T) {
	code, stdout, stderr := runCLI(t, "lint", "--format", "sarif", "testdata/tools/risky.json")
	if code != exitFindings {
		t.Fatalf("exit %d %s", code, stderr)
	}
	validateSARIF(t, []byte(stdout))
	var log struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Rules []struct {
						ID string `json:"id"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID    string `json:"ruleId"`
				RuleIndex int    `json:"ruleIndex"`
				Level     string `json:"level"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI string `json:"uri"`
						} `json:"artifactLocation"`
						Region struct {
							StartLine int `json:"startLine"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
				Properties map[string]string `json:"properties"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(stdout), &log); err != nil {
		t.Fatal(err)
	}
	run := log.Runs[0]
	if len(run.Results) != len(riskyFindings) || len(run.Tool.Driver.Rules) != 6 {
		t.Fatalf("%d results, %d rules", len(run.Results), len(run.Tool.Driver.Rules))
	}
	var got []string
	for _, r := range run.Results {
		loc := r.Locations[0].PhysicalLocation
		if run.Tool.Driver.Rules[r.RuleIndex].ID != r.RuleID || r.Level != "error" || loc.ArtifactLocation.URI != "testdata/tools/risky.json" {
			t.Errorf("result %+v", r)
		}
		got = append(got, fmt.Sprintf("%d %s %s/%s/%s", loc.Region.StartLine, r.RuleID, r.Properties["tool"], r.Properties["key"], r.Properties["field"]))
	}
	sort.Strings(got)
	if strings.Join(got, "\n") != strings.Join(riskyFindings, "\n") {
		t.Errorf("sarif results\n%s", strings.Join(got, "\n"))
	}
	// No findings is still a valid log.
	code, stdout, _ = runCLI(t, "lint", "--format", "sarif", "testdata/tools/demo.json")
	if code != exitOK || !strings.Contains(stdout, `"results": []`) {
		t.Fatalf("clean sarif: %d %s", code, stdout)
	}
	validateSARIF(t, []byte(stdout))
}

// sarifSchemaFile is the SARIF 2.1.0 JSON schema as the npm package
// @microsoft/jest-sarif ships it (a devDependency of e2e/, installed by
// test.sh with npm ci), so that the schema comes from the registry and
// not from a copy in this repository.
const sarifSchemaFile = "../../e2e/node_modules/@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json"

// validateSARIF checks a log against the SARIF 2.1.0 schema.
func validateSARIF(t *testing.T, b []byte) {
	t.Helper()
	testenv.RequireFile(t, "the SARIF schema (e2e's npm packages)", sarifSchemaFile, "run `npm ci` in e2e/; ./test.sh does")
	raw, err := os.ReadFile(sarifSchemaFile)
	if err != nil {
		t.Fatalf("the SARIF schema comes from e2e's npm packages: run `npm ci` in e2e/ (./test.sh does): %v", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(sarifSchema, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(sarifSchema)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Fatalf("not valid SARIF 2.1.0: %v", err)
	}
	// The schema really constrains: a log without a version fails.
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	delete(m, "version")
	bad, _ := json.Marshal(m)
	inst, _ = jsonschema.UnmarshalJSON(bytes.NewReader(bad))
	if sch.Validate(inst) == nil {
		t.Fatal("the SARIF schema accepted a log without a version")
	}
}

func TestLintUnusedAndUnmatchedRules(t *testing.T) {
	// Only book_demo_call is declared: the rules for the other two demo
	// tools are unused (warnings, exit 0).
	one := writeFile(t, "one.json", `{"tools": [{"name": "book_demo_call", "inputRequests": {}}]}`)
	code, out, stderr := lintJSON(t, one)
	if code != exitOK {
		t.Fatalf("exit %d %s", code, stderr)
	}
	got := summary(out.Findings)
	want := []string{"25 policy.rule_unused list_bookings/<nil>/", "30 policy.rule_unused connect_calendar/<nil>/"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("unused: %v", got)
	}
	for _, f := range out.Findings {
		if f["severity"] != "warning" || f["file"] != "policies/data/demo.json" {
			t.Errorf("%v", f)
		}
	}
	// A glob in the data that matches no declared tool: exit 2 with the
	// data file and line, and nothing on stdout.
	code, stdout, stderr := runCLI(t, "lint", "--data", "testdata/policy/globs.json", "testdata/tools/demo.json")
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, `testdata/policy/globs.json:13: tool glob "*_report" matches no known tool`) || !strings.Contains(stderr, `globs.json:12: tool glob "admin_*"`) {
		t.Errorf("unmatched glob: %d %q %q", code, stdout, stderr)
	}
}

func TestLintBadInput(t *testing.T) {
	notJSON := writeFile(t, "broken.json", "{\n  \"tools\": [\n    {\"name\": \"x\",}\n  ]\n}\n")
	unknown := writeFile(t, "what.json", `{"hello": "world"}`)
	array := writeFile(t, "array.json", `[1, 2]`)
	noName := writeFile(t, "noname.json", "{\"tools\": [\n {\"inputRequests\": {}}\n]}")
	badReq := writeFile(t, "badreq.json", "{\"tools\": [{\"name\": \"t\", \"inputRequests\": {\n \"k\": {\"params\": {}}\n}}]}")
	dup := writeFile(t, "dup.json", `{"tools": [{"name": "book_demo_call", "inputRequests": {}}]}`)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"not JSON", []string{notJSON}, notJSON + ":3:"},
		{"not JSON among good files", []string{"testdata/tools/demo.json", notJSON}, "not valid JSON"},
		{"unknown shape", []string{unknown}, unknown + ":1: not tool declarations"},
		{"array", []string{array}, array + ":1: expected a JSON object"},
		{"tool without a name", []string{noName}, noName + ":2: a tool needs a name"},
		{"input request without a method", []string{badReq}, badReq + `:2: input request "k"`},
		{"tool declared twice", []string{"testdata/tools/demo.json", dup}, `tool "book_demo_call" is also declared in testdata/tools/demo.json`},
		{"missing file", []string{"nope.json"}, "nope.json: cannot read: no such file or directory"},
		{"no file", nil, "no FILE given"},
		{"bad format", []string{"--format", "xml", "testdata/tools/demo.json"}, "--format must be text, json or sarif"},
		{"bad engine", []string{"--engine", "jit", "testdata/tools/demo.json"}, "--engine must be wasm or native"},
	} {
		code, stdout, stderr := runCLI(t, append([]string{"lint"}, tc.args...)...)
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %q", tc.name, code, stdout, stderr, tc.want)
		}
	}
}

func TestLintBadPolicy(t *testing.T) {
	ask, err := os.ReadFile("../../policies/ask.rego")
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(ask), "default allow := false", "default allow := ", 1)
	line := strings.Count(string(ask)[:strings.Index(string(ask), "default allow := false")], "\n") + 1
	dir := policyDir(t, map[string]string{"ask.rego": broken})
	code, stdout, stderr := runCLI(t, "lint", "--policy", dir, "testdata/tools/demo.json")
	if want := fmt.Sprintf("%s:%d: rego_parse_error", filepath.Join(dir, "ask.rego"), line); code != exitUsage || stdout != "" || !strings.Contains(stderr, want) {
		t.Errorf("syntax error: %d %q %q, want %q", code, stdout, stderr, want)
	}
	// Data that does not match the documented shape.
	data := writeFile(t, "data.json", "{\n  \"version\": 1,\n  \"limits\": {\"max_rounds\": {\"min\": 1, \"max\": 3}, \"ttl_seconds\": {\"min\": 1, \"max\": 60}},\n  \"forbidden_classes\": [\"secrets\"],\n  \"default\": {},\n  \"tools\": {}\n}\n")
	code, stdout, stderr = runCLI(t, "lint", "--data", data, "testdata/tools/demo.json")
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, data+`:4: unknown class "secrets"`) {
		t.Errorf("bad data: %d %q %q", code, stdout, stderr)
	}
	data2 := writeFile(t, "data2.json", "{\n  \"version\": 2\n}\n")
	code, _, stderr = runCLI(t, "lint", "--data", data2, "testdata/tools/demo.json")
	if code != exitUsage || !strings.Contains(stderr, data2+":2: at /version") || !strings.Contains(stderr, data2+":1: at /: missing properties") {
		t.Errorf("bad data shape: %d %q", code, stderr)
	}
}

// TestLintSecretClassifierAgreement: one secret classifier. Every case of
// the labelled corpus (testdata/secret-fields; public.jsonl is the shared
// corpus byte for byte) goes through lint with the shipped policy as a
// one-field form; a policy finding calls a field secret exactly when the
// core's secret rule (mrtr.form.secret_field) does.
func TestLintSecretClassifierAgreement(t *testing.T) {
	type corpusCase struct {
		ID     string          `json:"id"`
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Secret bool            `json:"secret"`
	}
	var cases []corpusCase
	files, _ := filepath.Glob("../../testdata/secret-fields/*.jsonl")
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			var c corpusCase
			if err := json.Unmarshal([]byte(line), &c); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			cases = append(cases, c)
		}
	}
	if len(cases) < 500 {
		t.Fatalf("only %d corpus cases", len(cases))
	}
	type tool struct {
		Name          string         `json:"name"`
		InputRequests map[string]any `json:"inputRequests"`
	}
	var decl struct {
		Tools []tool `json:"tools"`
	}
	for _, c := range cases {
		decl.Tools = append(decl.Tools, tool{Name: "t_" + c.ID, InputRequests: map[string]any{"k": map[string]any{
			"method": "elicitation/create",
			"params": map[string]any{"mode": "form", "message": "?", "requestedSchema": map[string]any{
				"type": "object", "properties": map[string]any{c.Name: c.Schema}}},
		}}})
	}
	b, _ := json.Marshal(decl)
	_, out, stderr := lintJSON(t, writeFile(t, "corpus.json", string(b)))
	if stderr != "" {
		t.Fatal(stderr)
	}
	quoted := regexp.MustCompile(`"[^"]*"`)
	secretWord := regexp.MustCompile(`\bsecret\b`)
	core, policy := map[string]bool{}, map[string]bool{}
	for _, f := range out.Findings {
		tl, _ := f["tool"].(string)
		code, _ := f["code"].(string)
		msg, _ := f["message"].(string)
		switch {
		case code == "mrtr.form.secret_field":
			core[tl] = true
		case strings.HasPrefix(code, "policy.") && secretWord.MatchString(quoted.ReplaceAllString(msg, "")):
			policy[tl] = true
		}
	}
	agree, labelled := 0, 0
	for _, c := range cases {
		tl := "t_" + c.ID
		if policy[tl] && !core[tl] {
			t.Errorf("%s (%s): the policy calls it secret, the core clears it", c.ID, c.Name)
		}
		if core[tl] && !policy[tl] {
			t.Errorf("%s (%s): the core calls it secret, the policy's input lost that", c.ID, c.Name)
		}
		if core[tl] == c.Secret {
			labelled++
		}
		if core[tl] == policy[tl] {
			agree++
		}
	}
	t.Logf("%d corpus fields: policy and core agree on %d; the core matches the label on %d; %d called secret", len(cases), agree, labelled, len(core))
}
