package host

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The official MCP 2026-07-28 schema, copied byte for byte (see its
// README.md). Every InputRequiredResult the guard emits in these tests and
// in the shared vectors is validated against it.
const (
	mcpSchemaDir    = "../testdata/mcp-schema-2026-07-28"
	mcpSchemaURL    = "https://modelcontextprotocol.io/schema/2026-07-28/schema.json"
	mcpSchemaSHA256 = "ef70b61f99b6d2e5e3b46863822eab08dff6a45bedc7a08914e0e5b133f40203"
)

type mcpDefs struct {
	inputRequiredResult *jsonschema.Schema
	inputRequest        *jsonschema.Schema
	formParams          *jsonschema.Schema
	urlParams           *jsonschema.Schema
	elicitResult        *jsonschema.Schema
	createMessageResult *jsonschema.Schema
	listRootsResult     *jsonschema.Schema
	inputResponses      *jsonschema.Schema
}

// mcpSchema compiles schema.json once per test binary.
var mcpSchema = sync.OnceValues(func() (*mcpDefs, error) {
	raw, err := os.ReadFile(filepath.Join(mcpSchemaDir, "schema.json"))
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat() // url params are "format": "uri"
	if err := c.AddResource(mcpSchemaURL, doc); err != nil {
		return nil, err
	}
	d := &mcpDefs{}
	for name, dst := range map[string]**jsonschema.Schema{
		"InputRequiredResult":     &d.inputRequiredResult,
		"InputRequest":            &d.inputRequest,
		"ElicitRequestFormParams": &d.formParams,
		"ElicitRequestURLParams":  &d.urlParams,
		"ElicitResult":            &d.elicitResult,
		"CreateMessageResult":     &d.createMessageResult,
		"ListRootsResult":         &d.listRootsResult,
		"InputResponses":          &d.inputResponses,
	} {
		s, err := c.Compile(mcpSchemaURL + "#/$defs/" + name)
		if err != nil {
			return nil, fmt.Errorf("compiling %s: %w", name, err)
		}
		*dst = s
	}
	return d, nil
})

func mustSchema(t testing.TB) *mcpDefs {
	t.Helper()
	d, err := mcpSchema()
	if err != nil {
		t.Fatalf("official MCP schema: %v", err)
	}
	return d
}

// instanceOf re-reads JSON the way the validator wants it (json.Number).
func instanceOf(t testing.TB, raw []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("not JSON: %v\n%s", err, raw)
	}
	return v
}

// checkWire marshals v (an *InputRequiredResult, or any value that
// marshals to one) and fails t unless it is a valid InputRequiredResult of
// MCP 2026-07-28: the schema, plus the rules schema.json cannot express
// (resultType "input_required"; at least one of inputRequests and
// requestState), and each input request against #/$defs/InputRequest and
// its elicitation params definition.
func checkWire(t testing.TB, v any) {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if err := wireProblems(mustSchema(t), raw); err != nil {
		t.Fatalf("not a valid InputRequiredResult: %v\n%s", err, raw)
	}
}

func wireProblems(d *mcpDefs, raw []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	if err := d.inputRequiredResult.Validate(inst); err != nil {
		return err
	}
	obj, _ := inst.(map[string]any)
	// schema.json types resultType as any string; the spec text fixes it.
	if obj["resultType"] != "input_required" {
		return fmt.Errorf("resultType is %v, want input_required", obj["resultType"])
	}
	reqs, hasReqs := obj["inputRequests"].(map[string]any)
	if _, hasState := obj["requestState"]; !hasReqs && !hasState {
		return fmt.Errorf("neither inputRequests nor requestState (the spec wants at least one)")
	}
	for key, r := range reqs {
		if err := d.inputRequest.Validate(r); err != nil {
			return fmt.Errorf("inputRequests[%q]: %w", key, err)
		}
		m, _ := r.(map[string]any)
		if m["method"] != "elicitation/create" {
			continue
		}
		// InputRequest is an anyOf; pin the elicitation params to the one
		// definition their mode names.
		params, _ := m["params"].(map[string]any)
		def := d.formParams
		if params["mode"] == "url" {
			def = d.urlParams
		}
		if err := def.Validate(params); err != nil {
			return fmt.Errorf("inputRequests[%q].params: %w", key, err)
		}
	}
	return nil
}

// checkAnswers validates every accepted answer of a complete outcome
// against the result type the client sends for it.
func checkAnswers(t testing.TB, answers map[string]json.RawMessage) {
	t.Helper()
	d := mustSchema(t)
	for key, raw := range answers {
		if err := answerProblems(d, raw); err != nil {
			t.Errorf("answer %q: %v\n%s", key, err, raw)
		}
	}
}

func answerProblems(d *mcpDefs, raw []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	m, _ := inst.(map[string]any)
	switch {
	case m["action"] != nil:
		return d.elicitResult.Validate(integerNumbers(m))
	case m["roots"] != nil:
		return d.listRootsResult.Validate(inst)
	case m["model"] != nil:
		return d.createMessageResult.Validate(inst)
	}
	return fmt.Errorf("not an ElicitResult, CreateMessageResult or ListRootsResult")
}

// integerNumbers works around one known deviation, for ElicitResult
// content only: schema.json types a content value as
// string|integer|boolean|string[], but schema.ts (the source of truth,
// see the digest §1.4) allows any number, and the guard rightly accepts
// 2.75 for a "type":"number" field. Each non-integer number becomes an
// integer so that the rest of the answer is still checked strictly;
// nothing else is relaxed.
func integerNumbers(m map[string]any) map[string]any {
	content, ok := m["content"].(map[string]any)
	if !ok {
		return m
	}
	fixed := make(map[string]any, len(content))
	for k, v := range content {
		if n, ok := v.(json.Number); ok && strings.ContainsAny(string(n), ".eE") {
			if f, err := n.Float64(); err == nil {
				v = json.Number(fmt.Sprintf("%d", int64(f)))
			}
		}
		fixed[k] = v
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	out["content"] = fixed
	return out
}

// checkVectorWire validates the recorded response of one vector case:
// the result of every input_required response and every answer of every
// complete one. It reports how many checks ran.
func checkVectorWire(t *testing.T, name string, response []byte) int {
	t.Helper()
	d := mustSchema(t)
	var resp struct {
		OK      bool                       `json:"ok"`
		Status  string                     `json:"status"`
		Result  json.RawMessage            `json:"result"`
		Answers map[string]json.RawMessage `json:"answers"`
	}
	if err := json.Unmarshal(response, &resp); err != nil || !resp.OK {
		return 0
	}
	n := 0
	switch resp.Status {
	case "input_required":
		if err := wireProblems(d, resp.Result); err != nil {
			t.Errorf("%s: result is not a valid InputRequiredResult: %v\n%s", name, err, resp.Result)
		}
		n++
	case "complete":
		for key, raw := range resp.Answers {
			if err := answerProblems(d, raw); err != nil {
				t.Errorf("%s: answer %q: %v\n%s", name, key, err, raw)
			}
			n++
		}
	}
	return n
}

// TestOfficialSchemaCopy pins the copy of schema.json and proves the
// checks above can fail.
func TestOfficialSchemaCopy(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(mcpSchemaDir, "schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != mcpSchemaSHA256 {
		t.Fatalf("schema.json is not the pinned official copy (sha256 %x)", sum)
	}
	for _, f := range []string{"LICENSE", "SOURCE", "README.md"} {
		if _, err := os.Stat(filepath.Join(mcpSchemaDir, f)); err != nil {
			t.Errorf("the schema copy needs %s: %v", f, err)
		}
	}
	d := mustSchema(t)
	form := `{"method":"elicitation/create","params":{"mode":"form","message":"m","requestedSchema":{"type":"object","properties":{"a":{"type":"string"}}}}}`
	good := []string{
		`{"resultType":"input_required","inputRequests":{"a":` + form + `},"requestState":"s"}`,
		`{"resultType":"input_required","requestState":"s"}`,
		`{"resultType":"input_required","inputRequests":{"r":{"method":"roots/list"}}}`,
		`{"resultType":"input_required","inputRequests":{"u":{"method":"elicitation/create","params":{"mode":"url","message":"m","url":"https://x.example/a"}}}}`,
	}
	for _, s := range good {
		if err := wireProblems(d, []byte(s)); err != nil {
			t.Errorf("valid result refused: %v\n%s", err, s)
		}
	}
	bad := map[string]string{
		"no resultType":          `{"inputRequests":{"a":` + form + `}}`,
		"other resultType":       `{"resultType":"complete","requestState":"s"}`,
		"neither field":          `{"resultType":"input_required"}`,
		"state not a string":     `{"resultType":"input_required","requestState":1}`,
		"request without params": `{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create"}}}`,
		"form without schema":    `{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"message":"m"}}}}`,
		"nested form property":   `{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"message":"m","requestedSchema":{"type":"object","properties":{"o":{"type":"object"}}}}}}}`,
		"url mode without url":   `{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"mode":"url","message":"m"}}}}`,
		"url not a uri":          `{"resultType":"input_required","inputRequests":{"a":{"method":"elicitation/create","params":{"mode":"url","message":"m","url":"not a uri"}}}}`,
		"sampling no maxTokens":  `{"resultType":"input_required","inputRequests":{"a":{"method":"sampling/createMessage","params":{"messages":[]}}}}`,
	}
	for name, s := range bad {
		if err := wireProblems(d, []byte(s)); err == nil {
			t.Errorf("%s: accepted\n%s", name, s)
		}
	}
	answers := map[string]bool{
		`{"action":"accept","content":{"n":"x","k":3,"b":true,"m":["a"]}}`: true,
		`{"action":"accept","content":{"size":2.75}}`:                      true, // the documented deviation
		`{"action":"accept"}`:                              true,
		`{"action":"decline"}`:                             true,
		`{"action":"maybe"}`:                               false,
		`{"action":"accept","content":{"o":{"nested":1}}}`: false,
		`{"action":"accept","content":{"l":[1,2]}}`:        false,
		`{"roots":[{"uri":"file:///home"}]}`:               true,
		`{"roots":[{"name":"no uri"}]}`:                    false,
	}
	for s, want := range answers {
		if err := answerProblems(d, []byte(s)); (err == nil) != want {
			t.Errorf("answer %s: valid=%v, want %v (%v)", s, err == nil, want, err)
		}
	}
	// The deviation integerNumbers works around is still in schema.json;
	// when upstream fixes it, this fails and the workaround can go.
	if err := d.elicitResult.Validate(instanceOf(t, []byte(`{"action":"accept","content":{"size":2.75}}`))); err == nil {
		t.Error("schema.json now accepts non-integer content numbers: drop integerNumbers")
	}
}

// TestSchemaEveryKind asks every kind of input request the guard allows,
// on both engines, and validates what it emits, first round and re-ask.
func TestSchemaEveryKind(t *testing.T) {
	ctx := context.Background()
	sampling := json.RawMessage(`{"messages":[{"role":"user","content":{"type":"text","text":"Summarise"}}],"maxTokens":200}`)
	for _, eng := range engines {
		t.Run(eng.String(), func(t *testing.T) {
			g := newGuard(t, eng)
			req := bookReq("alice")
			cases := map[string][]InputRequest{
				"form":       {Form("contact", "Who?", json.RawMessage(contactSchema))},
				"every type": {Form("seats", "How many?", json.RawMessage(seatsSchema))},
				"url":        {URL("connect", "Connect your calendar.", "https://crm.example.com/connect/7f3a")},
				"sampling":   {Sampling("sum", sampling)},
				"roots":      {Roots("roots")},
				"state only": {},
				"all":        {Form("contact", "Who?", json.RawMessage(contactSchema)), URL("connect", "Connect.", "https://crm.example.com/c"), Sampling("sum", sampling), Roots("roots")},
			}
			for name, inputs := range cases {
				res, err := g.Ask(ctx, req, inputs)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				checkWire(t, res)
				if len(res.InputRequests) != len(inputs) {
					t.Errorf("%s: %d input requests, asked %d", name, len(res.InputRequests), len(inputs))
				}
			}
			// A re-ask carries defaults and a corrected message.
			res, err := g.Ask(ctx, req, []InputRequest{Form("seats", "How many?", json.RawMessage(seatsSchema))})
			if err != nil {
				t.Fatal(err)
			}
			out, err := g.Resume(ctx, retry(req, res.RequestState, `{"seats":{"action":"accept","content":{"seats":20,"slot":"mon-10","size":1.5,"topics":["api"]}}}`))
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != InputRequired {
				t.Fatalf("status %s, want input_required", out.Status)
			}
			checkWire(t, out.InputRequired)
		})
	}
}
