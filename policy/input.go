package policy

import (
	"bytes"
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
	if ask {
		inputs := ast.NewObject()
		for _, in := range q.Inputs {
			if inputs.Get(ast.StringTerm(in.Key)) != nil {
				return nil, &host.Error{Code: host.CodePolicyDenied, Message: "input request key " + in.Key + " is used twice", Reason: "policy_input"}
			}
			req := ast.NewObject(ast.Item(kMethod, ast.StringTerm(in.Method)))
			if len(in.Params) > 0 {
				v, err := ast.ValueFromReader(bytes.NewReader(in.Params))
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
