// Command gohelper is the Go side of the sdk-js interoperability tests: it
// reads a list of operations as JSON on stdin, runs each through the Go
// host (host.Guard over guard.wasm) or the Go ledger, and prints one JSON
// result per operation. The Node tests compare its answers with their own:
// states sealed by one host must open in the other, and both ledgers must
// read each other's Redis entries.
package main
