package task

import (
	"crypto/rand"
	"encoding/base64"
)

// idBytes is the number of random bytes in a task id: 192 bits, well above
// the spec's 128-bit floor.
const idBytes = 24

// NewID returns a new task id: 24 bytes from crypto/rand in unpadded
// base64url, so the id is header-safe and never needs the =?base64?…?= form.
func NewID() string {
	var b [idBytes]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+).
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// ValidID reports whether s has the shape of an id made by [NewID]. Lookups
// of ids that fail it can be answered without touching the store.
func ValidID(s string) bool {
	if len(s) != base64.RawURLEncoding.EncodedLen(idBytes) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
