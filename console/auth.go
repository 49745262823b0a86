package console

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
)

// Role is what an operator may do in the console.
type Role string

// The roles of [Tokens].
const (
	// Viewer may look at everything the console shows.
	Viewer Role = "viewer"
	// Operator may look, and act: cancel tasks.
	Operator Role = "operator"
)

// MinTokenLen is the shortest console token ParseTokens accepts.
const MinTokenLen = 16

// Account is who uses the console: an operator's name and role.
type Account struct {
	Name string
	Role Role
}

// CanAct reports whether the account may change tasks.
func (a Account) CanAct() bool { return a.Role == Operator }

// localAccount is who uses a console without tokens: anyone who can reach
// its loopback address.
var localAccount = Account{Name: "local", Role: Operator}

// Tokens maps console tokens to the accounts they sign in. Operators sign
// in with their token once; a session cookie carries them afterwards.
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	hash    [sha256.Size]byte
	account Account
}

// ParseTokens reads lines of "TOKEN NAME ROLE", ROLE being viewer or
// operator; blank lines and lines starting with # are skipped. Tokens must
// be at least MinTokenLen characters and appear once. name (the file's
// name) starts every error, with the line at fault.
func ParseTokens(name string, r io.Reader) (*Tokens, error) {
	t := &Tokens{}
	seen := map[[sha256.Size]byte]int{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("%s:%d: want \"TOKEN NAME ROLE\", got %d fields", name, n, len(f))
		}
		if len(f[0]) < MinTokenLen {
			return nil, fmt.Errorf("%s:%d: the token is %d characters long: use at least %d random ones (e.g. openssl rand -hex 16)", name, n, len(f[0]), MinTokenLen)
		}
		role := Role(f[2])
		if role != Viewer && role != Operator {
			return nil, fmt.Errorf("%s:%d: role %q: use %s or %s", name, n, f[2], Viewer, Operator)
		}
		h := sha256.Sum256([]byte(f[0]))
		if first, dup := seen[h]; dup {
			return nil, fmt.Errorf("%s:%d: the token of line %d again: give each operator a token of their own", name, n, first)
		}
		seen[h] = n
		t.entries = append(t.entries, tokenEntry{hash: h, account: Account{Name: f[1], Role: role}})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(t.entries) == 0 {
		return nil, fmt.Errorf("%s: no tokens; add lines of \"TOKEN NAME ROLE\"", name)
	}
	return t, nil
}

// lookup returns the account of token. It compares the token with every
// entry, in constant time each.
func (t *Tokens) lookup(token string) (Account, bool) {
	h := sha256.Sum256([]byte(token))
	var found Account
	ok := false
	for _, e := range t.entries {
		if subtle.ConstantTimeCompare(h[:], e.hash[:]) == 1 {
			found, ok = e.account, true
		}
	}
	return found, ok
}

// CheckListen returns an error unless a console may listen on addr: any
// address with tokens, only a loopback one without, since then whoever
// reaches the console is an operator.
func CheckListen(addr string, withTokens bool) error {
	if withTokens {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("console address %q: %w", addr, err)
	}
	if !loopbackHost(host) {
		return fmt.Errorf("console address %q is not a loopback address: without tokens anyone who reaches it is an operator; listen on 127.0.0.1, or give tokens", addr)
	}
	return nil
}

// loopbackHost reports whether host (no port) names the loopback interface:
// localhost, or a loopback IP address.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
