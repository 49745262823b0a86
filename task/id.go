package task

import (
	"crypto/rand"
	"encoding/base64"
	"time"
)

// The bytes of a task id: a time prefix, then 144 random bits, well above
// the spec's 128-bit floor.
const (
	idTimeBytes = 6
	idBytes     = idTimeBytes + 18
)

// NewID returns a new task id: 24 bytes in unpadded base64url, so the id is
// header-safe and never needs the =?base64?…?= form. The first 6 bytes are
// the time in milliseconds, big-endian, so that ids made close in time sit
// close together in a store's index (as with UUIDv7: a group commit of
// random ids would dirty one index page per id); the other 18 come from
// crypto/rand and make the id unguessable.
func NewID() string {
	var b [idBytes]byte
	ms := time.Now().UnixMilli()
	for i := idTimeBytes - 1; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	_, _ = rand.Read(b[idTimeBytes:]) // crypto/rand.Read never fails (Go 1.24+).
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
