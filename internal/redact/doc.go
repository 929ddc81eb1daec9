// Package redact prints values that hold secrets (answers, request states,
// tokens, keys, calendar links) by their safe fields only. Each such type
// lists its safe fields once, as slog attributes, and answers every
// printing channel from them: fmt (every verb, %#v included, also as a
// field of another value), String, GoString, slog.LogValuer and, where
// JSON is not the type's purpose, json.Marshal.
package redact
