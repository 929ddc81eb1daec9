package host

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
)

// Keyring holds the keys that seal and open requestState, as PASERK
// k4.local strings. The first key seals new states; every key opens.
// Rotate by putting a new key first, keeping the old one until the states
// it sealed have expired, then removing it.
//
// A Keyring never prints its keys: String, GoString and Format show only
// how many there are.
type Keyring struct {
	// r hides the keys behind a pointer, so that even a Keyring printed
	// as a field of another struct shows an address, not keys.
	r *keyList
}

type keyList struct{ keys []string }

const keyPrefix = "k4.local."

// ParseKeys reads keys in the MRTR_KEYS format: k4.local keys separated
// by commas, spaces or new lines; in files, lines starting with # are
// comments. The first key is the primary.
func ParseKeys(s string) (*Keyring, error) {
	var keys []string
	for _, line := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "#") {
			continue
		}
		for _, f := range strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\r' }) {
			if err := checkKey(f); err != nil {
				return nil, fmt.Errorf("mrtr: key %d: %w", len(keys)+1, err)
			}
			for _, k := range keys {
				if k == f {
					return nil, fmt.Errorf("mrtr: key %d is listed twice", len(keys)+1)
				}
			}
			keys = append(keys, f)
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("mrtr: no keys (want k4.local.… keys; `mrtr-wasm keygen` makes one)")
	}
	return &Keyring{r: &keyList{keys: keys}}, nil
}

// checkKey validates a key's shape without echoing it.
func checkKey(k string) error {
	if !strings.HasPrefix(k, keyPrefix) {
		return errors.New("not a PASERK k4.local key")
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(k[len(keyPrefix):])
	if err != nil || len(raw) != 32 {
		return errors.New("a k4.local key holds 32 bytes in base64url without padding")
	}
	return nil
}

// KeysFromEnv reads MRTR_KEYS. It returns (nil, nil) when it is unset.
func KeysFromEnv() (*Keyring, error) {
	v, ok := os.LookupEnv("MRTR_KEYS")
	if !ok || strings.TrimSpace(v) == "" {
		return nil, nil
	}
	k, err := ParseKeys(v)
	if err != nil {
		return nil, fmt.Errorf("MRTR_KEYS: %w", err)
	}
	return k, nil
}

// LoadKeyFile reads a key file in the MRTR_KEYS format.
func LoadKeyFile(path string) (*Keyring, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	k, err := ParseKeys(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// GenerateKey returns a new random k4.local key.
func GenerateKey() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("mrtr: crypto/rand failed: " + err.Error())
	}
	return keyPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// NewKeyring returns a keyring of freshly generated keys, for tests and
// single-process servers that accept losing rounds on restart.
func NewKeyring() *Keyring {
	return &Keyring{r: &keyList{keys: []string{GenerateKey()}}}
}

// Len is the number of keys.
func (k Keyring) Len() int {
	if k.r == nil {
		return 0
	}
	return len(k.r.keys)
}

func (k Keyring) list() []string {
	if k.r == nil {
		return nil
	}
	return k.r.keys
}

// String, GoString, Format and MarshalJSON keep keys out of every fmt
// verb, %#v and JSON logs; value receivers so that a Keyring held by value
// is redacted too.
func (k Keyring) String() string { return fmt.Sprintf("Keyring(%d keys, redacted)", k.Len()) }

// GoString keeps keys out of %#v.
func (k Keyring) GoString() string { return k.String() }

// Format keeps keys out of every fmt verb.
func (k Keyring) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(k.String())) }

// MarshalJSON keeps keys out of JSON logs.
func (k Keyring) MarshalJSON() ([]byte, error) { return []byte(`"` + k.String() + `"`), nil }
