// Package rawjson walks the members of a JSON object on bytes already
// known to be JSON, without decoding the values: how the stdio upstream
// rewrites an id in place and how the proxy reads an id, a method or a
// resultType without decoding a whole message. It is the proxy's, not
// part of the API.
package rawjson
