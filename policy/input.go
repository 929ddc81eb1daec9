package policy

import (
	"bytes"
	"encoding/json"
	"io"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/mrtr-wasm/mrtr-wasm/host"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

var (
	kPrincipal = ast.InternedTerm("principal")
	kMethod    = ast.InternedTerm("method")
	kTarget    = ast.InternedTerm("target")
	kTTL       = ast.InternedTerm("ttl_seconds")
	kRounds    = ast.InternedTerm("max_rounds")
	kInputs    = ast.InternedTerm("inputs")
	kParams    = ast.InternedTerm("params")
	kScopes    = ast.InternedTerm("scopes")
	kClaims    = ast.InternedTerm("claims")
)

// queryInput builds the policy input of a guard query straight as an AST
// value, the shape policies/README.md documents.
func queryInput(q *host.PolicyQuery, ask bool) (ast.Value, error) {
	obj := ast.NewObject(
		ast.Item(kPrincipal, ast.StringTerm(q.Principal)),
		ast.Item(kMethod, ast.StringTerm(q.Method)),
		ast.Item(kTarget, ast.StringTerm(q.Target)),
		ast.Item(kTTL, ast.IntNumberTerm(int(q.TTL/time.Second))),
		ast.Item(kRounds, ast.IntNumberTerm(q.MaxRounds)),
	)
	scopes := make([]*ast.Term, len(q.Scopes))
	for i, sc := range q.Scopes {
		scopes[i] = ast.StringTerm(sc)
	}
	obj.Insert(kScopes, ast.ArrayTerm(scopes...))
	claims := ast.Value(ast.NewObject())
	if len(q.Claims) > 0 {
		v, err := ast.ValueFromReader(bytes.NewReader(q.Claims))
		if _, isObj := v.(ast.Object); err != nil || !isObj {
			return nil, &host.Error{Code: host.CodePolicyDenied, Message: "the token's claims are not a JSON object", Reason: "policy_input"}
		}
		claims = v
	}
	obj.Insert(kClaims, ast.NewTerm(claims))
	if ask {
		inputs := ast.NewObject()
		for _, in := range q.Inputs {
			if inputs.Get(ast.StringTerm(in.Key)) != nil {
				return nil, &host.Error{Code: host.CodePolicyDenied, Message: "input request key " + in.Key + " is used twice", Reason: "policy_input"}
			}
			req := ast.NewObject(ast.Item(kMethod, ast.StringTerm(in.Method)))
			if len(in.Params) > 0 {
				v, err := ast.ValueFromReader(bytes.NewReader(policyParams(in.Params)))
				if err != nil {
					return nil, &host.Error{Code: host.CodePolicyDenied, Message: "input request " + in.Key + " has params that are not JSON", Reason: "policy_input"}
				}
				req.Insert(kParams, ast.NewTerm(v))
			}
			inputs.Insert(ast.StringTerm(in.Key), ast.NewTerm(req))
		}
		obj.Insert(kInputs, ast.NewTerm(inputs))
	}
	return obj, nil
}

// policyParams is what the policy sees of an input request's params: the
// wire params without "message" (free text) and without the properties'
// "default"s (in a re-ask they are the user's own answers). Neither may
// decide what a tool is allowed to ask, and user data has no business in
// the policy engine. Because of it, the same form asked of many users is
// one memo entry (memo.go). Params that are not an object pass unchanged
// (the guard's lint refuses them anyway).
func policyParams(raw json.RawMessage) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	delete(m, "message")
	if rs, ok := m["requestedSchema"]; ok {
		var schema map[string]json.RawMessage
		if json.Unmarshal(rs, &schema) == nil {
			var props map[string]map[string]json.RawMessage
			if json.Unmarshal(schema["properties"], &props) == nil && props != nil {
				for _, p := range props {
					delete(p, "default")
				}
				schema["properties"], _ = json.Marshal(props)
				m["requestedSchema"], _ = json.Marshal(schema)
			}
		}
	}
	b, err := json.Marshal(m) // map keys sorted: one canonical text
	if err != nil {
		return raw
	}
	return b
}
