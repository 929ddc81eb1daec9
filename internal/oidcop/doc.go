// Package oidcop starts a real OpenID provider for tests: the example
// provider of github.com/zitadel/oidc/v3, built from the module proxy by
// the wrapper module in e2e/oidc-op (never a hand-written token minter,
// never a committed binary). Tests use it; mrtr-wasm itself never does.
package oidcop
