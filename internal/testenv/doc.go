// Package testenv decides what a test does when a service it needs
// (Redis, PostgreSQL, the redis-server or PostgreSQL binaries, Chromium)
// is missing: it skips with one line naming the service and how to
// provide it, so that `go test ./...` runs on a laptop without them. With
// MRTR_REQUIRE_SERVICES=1 (set by .ci/run) every such skip is a failure,
// so CI still runs them all.
//
// The addresses come from MRTR_TEST_REDIS and MRTR_TEST_POSTGRES,
// defaulting to the development machines' 127.0.0.1 services.
package testenv
