package mcpserver

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Tokens maps bearer tokens to the principals they authenticate.
type Tokens map[string]string

// ParseTokens reads lines of "TOKEN PRINCIPAL"; blank lines and lines
// starting with # are skipped. name is used in error messages.
func ParseTokens(name string, r io.Reader) (Tokens, error) {
	toks := Tokens{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("%s:%d: want \"TOKEN PRINCIPAL\", got %d fields", name, n, len(f))
		}
		if _, dup := toks[f[0]]; dup {
			return nil, fmt.Errorf("%s:%d: token listed twice", name, n)
		}
		toks[f[0]] = f[1]
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(toks) == 0 {
		return nil, fmt.Errorf("%s: no tokens; add lines of \"TOKEN PRINCIPAL\"", name)
	}
	return toks, nil
}

// lookup returns the principal of token, comparing in constant time.
func (t Tokens) lookup(token string) (string, bool) {
	want := sha256.Sum256([]byte(token))
	principal, found := "", false
	for tok, p := range t {
		got := sha256.Sum256([]byte(tok))
		if subtle.ConstantTimeCompare(want[:], got[:]) == 1 {
			principal, found = p, true
		}
	}
	return principal, found
}

// RequireBearer wraps next so that every request must carry
// "Authorization: Bearer TOKEN" with a token from t; others get HTTP 401
// with a WWW-Authenticate challenge. The token's principal reaches
// handlers as the request's TokenInfo.UserID, which tasks are bound to.
func (t Tokens) RequireBearer(next http.Handler) http.Handler {
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		p, ok := t.lookup(token)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: p, Expiration: time.Now().Add(time.Hour)}, nil
	}
	inner := auth.RequireBearerToken(verify, nil)(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := strings.Fields(r.Header.Get("Authorization"))
		if len(f) == 2 && strings.EqualFold(f[0], "bearer") {
			if _, ok := t.lookup(f[1]); ok {
				inner.ServeHTTP(w, r)
				return
			}
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcptasks"`)
		writeError(w, http.StatusUnauthorized, nil, codeInvalidRequest, "Unauthorized: send Authorization: Bearer TOKEN")
	})
}
