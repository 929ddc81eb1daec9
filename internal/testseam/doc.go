// Package testseam lets this module's tests replace the guard's clock and
// its source of randomness. It is internal so that no program outside the
// module can hand the guard a reader that repeats PASETO nonces.
//
// Package host registers its unexported options here when it loads; a
// test asks for them by the option type it wants:
//
//	g, _ := host.New(ctx, host.WithKeys(k), testseam.Clock[host.Option](now))
package testseam
