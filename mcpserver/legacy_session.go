package mcpserver

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// SessionKeySize is the least number of bytes of [Options.SessionKey].
const SessionKeySize = 32

// maxSessionCapabilities bounds the client capabilities a 2025-11-25
// session id carries; initialize with larger ones is refused.
const maxSessionCapabilities = 2048

// sessionPrefix starts every session id, naming the format's version.
const sessionPrefix = "s1."

// legacySession is what a 2025-11-25 session id says: who initialized it
// and the capabilities the client declared. The id is the session: no
// replica keeps anything of it (see design/eras.md).
type legacySession struct {
	// Principal is who initialized the session; only that principal may
	// use it.
	Principal string `json:"p"`
	// Capabilities are the client capabilities of initialize, without
	// extensions (which mean nothing under 2025-11-25).
	Capabilities json.RawMessage `json:"c"`
	// Nonce makes each initialize's session id its own: two clients of
	// one principal with the same capabilities must not share a session,
	// whose request ids (numbered from 1 by each) name its requests in
	// flight (legacyCalls). Empty in the ids of earlier versions.
	Nonce string `json:"n,omitempty"`
}

// newSessionNonce returns a random Nonce.
func newSessionNonce() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+).
	return base64.RawURLEncoding.EncodeToString(b)
}

// errBadSession is the error of a session id this server did not issue,
// or issued to another principal.
var errBadSession = errors.New("session not found")

// sessionKey returns Options.SessionKey, or a random key if it is nil. A
// key shorter than SessionKeySize is a programmer's error.
func sessionKey(key []byte) []byte {
	if len(key) >= SessionKeySize {
		return key
	}
	if key != nil {
		panic(fmt.Sprintf("mcpserver: Options.SessionKey has %d bytes; it needs at least %d (SessionKeySize), or nil for a random key", len(key), SessionKeySize))
	}
	k := make([]byte, SessionKeySize)
	_, _ = rand.Read(k) // crypto/rand.Read never fails (Go 1.24+).
	return k
}

// encodeSession returns the session id of ls: its JSON in base64url and
// an HMAC-SHA256 of it under key.
func encodeSession(key []byte, ls *legacySession) (string, error) {
	b, err := json.Marshal(ls)
	if err != nil {
		return "", err
	}
	body := sessionPrefix + base64.RawURLEncoding.EncodeToString(b)
	return body + "." + base64.RawURLEncoding.EncodeToString(sessionMAC(key, body)), nil
}

// decodeSession verifies id under key and returns its session, which must
// belong to principal.
func decodeSession(key []byte, id, principal string) (*legacySession, error) {
	rest, found := strings.CutPrefix(id, sessionPrefix)
	body, mac, ok := strings.Cut(rest, ".")
	if !found || !ok {
		return nil, errBadSession
	}
	got, err := base64.RawURLEncoding.DecodeString(mac)
	if err != nil || !hmac.Equal(got, sessionMAC(key, sessionPrefix+body)) {
		return nil, errBadSession
	}
	b, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return nil, errBadSession
	}
	var ls legacySession
	if json.Unmarshal(b, &ls) != nil || ls.Principal != principal {
		return nil, errBadSession
	}
	return &ls, nil
}

func sessionMAC(key []byte, body string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(body))
	return m.Sum(nil)
}

// sessionCapabilities returns the capabilities of an initialize request to
// keep in its session: the object as sent, without extensions.
func sessionCapabilities(raw json.RawMessage) (json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, errors.New("params.capabilities must be an object")
		}
	}
	delete(m, "extensions")
	b, _ := json.Marshal(m) // a map of raw JSON always encodes
	if len(b) > maxSessionCapabilities {
		return nil, errors.New("params.capabilities is too large")
	}
	return b, nil
}
