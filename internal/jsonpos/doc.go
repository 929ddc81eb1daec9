// Package jsonpos finds the line of a JSON value from its JSON pointer
// (RFC 6901), so that policy load errors and lint findings can name a
// line. It is the CLI's and the policy loader's, not part of the API.
package jsonpos
