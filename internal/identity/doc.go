// Package identity is where every check of who a caller is lives, for
// `mrtr-wasm serve` and `mrtr-wasm proxy` alike: bearer tokens from an
// --auth-tokens file (for try-outs), or OAuth 2.1 access tokens (JWTs)
// from an authorization server (--oauth-issuer), which makes the server a
// protected resource as MCP's authorization spec says: RFC 9728 metadata,
// and 401/403 challenges that point at it.
//
// Flags registers and validates the flags; Build turns them into an
// Authenticator, whose Middleware puts the caller's Identity (principal,
// scopes, chosen claims) into the request's context, both as FromContext
// and as the MCP SDK's auth.TokenInfo. Login is the OpenID Connect client
// (authorization code with PKCE) of pages that must know who the browser's
// user is.
//
// The principal of an OAuth caller is Principal(iss, sub) = iss + "#" +
// sub. An issuer identifier has no fragment (RFC 8414 §2, OpenID
// Connect Discovery §3), so the first "#" splits it back unambiguously,
// and the same person at the same issuer is always the same principal.
package identity
