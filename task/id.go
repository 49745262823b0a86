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
func NewID() string { return NewIDAt(time.Now()) }

// NewIDAt is [NewID] with the time prefix of t: the engine gives a task
// the id of its CreatedAt, so that [IDTimeRange] finds it.
func NewIDAt(t time.Time) string {
	var b [idBytes]byte
	ms := t.UnixMilli()
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

// IDTimeRange returns the creation times that an id made by [NewIDAt] and
// starting with prefix can carry: from (inclusive) to to (exclusive). It
// returns false if prefix is empty or holds a byte that is not base64url.
// A prefix of 8 characters or more names one millisecond.
func IDTimeRange(prefix string) (from, to time.Time, ok bool) {
	if prefix == "" {
		return time.Time{}, time.Time{}, false
	}
	const timeBits = idTimeBytes * 8
	var ms int64 // the known bits of the time, left-aligned in timeBits
	bits := 0
	for i := 0; i < len(prefix); i++ {
		v := base64URLValue(prefix[i])
		if v < 0 {
			return time.Time{}, time.Time{}, false
		}
		if bits >= timeBits {
			continue // past the time: random bits
		}
		take := min(6, timeBits-bits)
		ms = ms<<take | int64(v>>(6-take))
		bits += take
	}
	lo := ms << (timeBits - bits)
	hi := (ms + 1) << (timeBits - bits)
	return time.UnixMilli(lo).UTC(), time.UnixMilli(hi).UTC(), true
}

// base64URLValue is the value of a base64url character, or -1.
func base64URLValue(c byte) int {
	switch {
	case 'A' <= c && c <= 'Z':
		return int(c - 'A')
	case 'a' <= c && c <= 'z':
		return int(c-'a') + 26
	case '0' <= c && c <= '9':
		return int(c-'0') + 52
	case c == '-':
		return 62
	case c == '_':
		return 63
	}
	return -1
}
