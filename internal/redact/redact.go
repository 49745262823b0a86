// Package redact removes what may carry a secret from URLs, and from the
// texts of errors that quote them.
package redact

import (
	"errors"
	"net/url"
	"strconv"
	"strings"
)

// URL returns raw without what may carry a secret: its user information
// (a password), query (an API key) and fragment; "" if raw does not
// parse as a URL (it may hold a secret where it does not parse).
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return safe(u)
}

func safe(u *url.URL) string {
	x := *u
	x.User, x.RawQuery, x.ForceQuery, x.Fragment, x.RawFragment = nil, "", false, "", ""
	return x.String()
}

// Text returns msg, the text of an error, with each of urls and the URL of
// a *url.Error in err's chain, if err is not nil (the target of a
// redirect, say: net/http's errors quote it with its query), in every
// form an error may quote it (as given, escaped as %q escapes it, as
// url.URL writes it, with its password written as "xxxxx"), written as
// URL writes it.
func Text(msg string, err error, urls ...string) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		urls = append(urls, ue.URL)
	}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if raw == "" || err != nil {
			continue
		}
		s := safe(u)
		quoted := strconv.Quote(raw)
		for _, form := range []string{raw, quoted[1 : len(quoted)-1], u.String(), u.Redacted()} {
			if form != s {
				msg = strings.ReplaceAll(msg, form, s)
			}
		}
	}
	return msg
}
