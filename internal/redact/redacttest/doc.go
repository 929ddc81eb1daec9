// Package redacttest checks that a value keeps its secrets out of every
// printing channel.
package redacttest
