package policy

import "github.com/open-policy-agent/opa/v1/ast"

// wasmSafe are the builtins OPA's Wasm target implements inside the module
// itself, plus sprintf, which every Wasm SDK provides (the Go SDK through
// topdown, @open-policy-agent/opa-wasm through sprintf-js; use only %s,
// %d and %v there). Policies are compiled with nothing else, so a rule
// that would behave differently in Node fails at load, with its line.
var wasmSafe = []*ast.Builtin{
	ast.Equality, ast.Assign, ast.Member, ast.MemberWithKey, ast.Sprintf,
	ast.Plus, ast.Minus, ast.Multiply, ast.Divide, ast.Abs, ast.Round, ast.Ceil, ast.Floor, ast.Rem,
	ast.ArrayConcat, ast.ArrayReverse, ast.ArraySlice, ast.SetDiff, ast.And, ast.Or,
	ast.Intersection, ast.Union, ast.IsNumber, ast.IsString, ast.IsBoolean, ast.IsArray, ast.IsSet,
	ast.IsObject, ast.IsNull, ast.TypeNameBuiltin, ast.Count, ast.Sum, ast.Product, ast.Max, ast.Min,
	ast.Sort, ast.Equal, ast.GreaterThan, ast.GreaterThanEq, ast.LessThan, ast.LessThanEq, ast.NotEqual,
	ast.GlobMatch, ast.ObjectFilter, ast.ObjectGet, ast.ObjectKeys, ast.ObjectRemove, ast.ObjectUnion,
	ast.ObjectUnionN, ast.Concat, ast.FormatInt, ast.IndexOf, ast.Substring, ast.Lower, ast.Upper,
	ast.Contains, ast.StartsWith, ast.EndsWith, ast.StringReverse, ast.Split, ast.Replace, ast.ReplaceN,
	ast.Trim, ast.TrimLeft, ast.TrimPrefix, ast.TrimRight, ast.TrimSuffix, ast.TrimSpace,
	ast.NumbersRange, ast.ToNumber, ast.RegexIsValid, ast.RegexMatch, ast.RegexFindAllStringSubmatch,
	ast.NetCIDRContains, ast.NetCIDROverlap, ast.NetCIDRIntersects,
}

// capabilities limits the compiler to wasmSafe builtins.
func capabilities() *ast.Capabilities {
	c := ast.CapabilitiesForThisVersion()
	c.Builtins = append([]*ast.Builtin(nil), wasmSafe...)
	return c
}

// hostBuiltins are the only builtins a compiled Wasm policy may import
// from its host.
var hostBuiltins = map[string]bool{ast.Sprintf.Name: true}
