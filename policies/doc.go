// Package policies holds the shipped Rego policies, their tests and the
// example data files, embedded so that a binary runs the same policy
// without a policy directory. README.md documents the input, the data and
// every decision code; package policy loads and evaluates them.
package policies
