package main

import (
	"strings"
	"testing"
)

// A mistyped --upstream-header is refused by its number, never with its
// text, which may be the credential itself; a name that is not an HTTP
// token (it would fail every request with an error quoting it) is refused
// at start.
func TestUpstreamHeaderErrorsDoNotEchoTheValue(t *testing.T) {
	const secret = "sk-live-0123456789"
	for _, v := range []string{
		"Authorization Bearer " + secret,
		secret,
		"TOKEN=" + secret + ":x",
		"Bearer " + secret + ":x",
		"X-Key\x01" + secret + ": v",
		"X-Key: " + secret + "\r\nInjected: 1",
		secret + ":",
		secret + ":  ",
	} {
		_, err := parseHeaders([]string{"X-Ok: fine", v})
		if err == nil {
			t.Errorf("%q was taken", v)
			continue
		}
		if strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "number 2") {
			t.Errorf("%q: %v", v, err)
		}
	}
	h, err := parseHeaders([]string{"Authorization: Bearer " + secret, "X-Api-Key:" + secret})
	if err != nil || h.Get("Authorization") != "Bearer "+secret || h.Get("X-Api-Key") != secret {
		t.Fatalf("%v %v", h, err)
	}
}
