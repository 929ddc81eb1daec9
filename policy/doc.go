// Package policy evaluates the deployment's policy (OPA/Rego, in
// policies/) for the guard: which fields and input kinds each tool may
// ask for, how many rounds it gets and how long its state lives.
//
// The guard core decides what is safe; the policy decides what this
// deployment allows. Load prepares the policy once (a bad policy or data
// file fails there, with the file and line); the Engine is a host.Policy,
// evaluated on every ask and resume, and Reload and SIGHUP
// (ReloadOnSIGHUP) swap a new policy in atomically.
//
//	pol, err := policy.Load(ctx, "policies", policy.WithData("strict"))
//	g, err := host.New(ctx, host.WithKeys(keys), host.WithPolicy(pol))
//
// WriteBundle compiles the same policy to OPA's Wasm target, so that
// other runtimes (the Node package, with @open-policy-agent/opa-wasm)
// evaluate the very same rules. Policies may only use builtins both
// targets implement alike; Load refuses any other.
package policy
