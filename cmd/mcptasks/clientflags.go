package main

import (
	"cmp"
	"context"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/pflag"
	xterm "golang.org/x/term"

	"github.com/mcptasks/mcptasks/client"
)

// Environment variables of the client commands. A flag wins over its
// variable.
const (
	envToken   = "MCPTASKS_TOKEN"
	envJournal = "MCPTASKS_JOURNAL"
)

// idHelp says, in the help of the commands that take a task ID, what ID
// may be. The numbers follow from task.NewID: 8 base64url characters of
// milliseconds (the 5th worth 2^18 ms, the 6th 2^12, the 7th 2^6), then
// 144 random bits.
const idHelp = `ID is a task id as "mcptasks tasks" lists it (AaJDdmLSHeul_aCan1Fo20YwTAjoBENt),
or a prefix of one that is unique in the journal. An id's first 8 characters
are the time the task was made, in milliseconds (the 5th changes every 4.4
minutes, the 6th every 4 s), so tasks made minutes apart usually share their first 4
or 5 characters, and tasks made in one second their first 6 or 7: a prefix
must reach past the time stamp. 10 characters (AaJDdmLSHe: the millisecond
and 12 random bits) are unique in practice; an ambiguous prefix is refused,
with the ids it matches.`

// clientFlags are the flags every client command shares.
type clientFlags struct {
	token   string
	journal string
	url     string // only for commands that take a task id
}

func (f *clientFlags) register(fl *pflag.FlagSet, withURL bool) {
	fl.StringVar(&f.token, "token", "", "bearer `token` sent as \"Authorization: Bearer TOKEN\" (default $"+envToken+")")
	fl.StringVar(&f.journal, "journal", "", "`file` of the local task journal (default $"+envJournal+", else $XDG_STATE_HOME/mcptasks/journal.json, else ~/.local/state/mcptasks/journal.json)")
	if withURL {
		fl.StringVar(&f.url, "url", "", "MCP endpoint `URL` of the task's server (default: the one the journal recorded for the task)")
	}
}

// tokenValue is the bearer token: --token, else $MCPTASKS_TOKEN.
func (f *clientFlags) tokenValue() string {
	if f.token != "" {
		return f.token
	}
	return os.Getenv(envToken)
}

// journalPath is the journal file: --journal, else $MCPTASKS_JOURNAL, else
// the XDG state directory.
func (f *clientFlags) journalPath() (string, error) {
	if f.journal != "" {
		return f.journal, nil
	}
	if p := os.Getenv(envJournal); p != "" {
		return p, nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "mcptasks", "journal.json"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", usageError("no journal file: set --journal or $%s (%v)", envJournal, err)
	}
	return filepath.Join(home, ".local", "state", "mcptasks", "journal.json"), nil
}

// unreadableJournal is the usage error of a journal that cannot be read
// (err names the file), with the way out.
func unreadableJournal(err error) error {
	return usageError("%v: move the file aside to start a new journal (or name another with --journal)", err)
}

func (f *clientFlags) openJournal() (client.Journal, error) {
	p, err := f.journalPath()
	if err != nil {
		return nil, err
	}
	return client.FileJournal(p), nil
}

// newClient returns a client of url. It declares form elicitation (the
// client's default) whether or not it can prompt: a task's questions can
// be answered later with "mcptasks answer"; the commands that wait give
// their prompts to each wait (client.WithInputHandler). protocol is the
// MCP revision to speak ("" finds it out: 2026-07-28, or the 2025-11-25
// tasks of servers that have only those).
func (f *clientFlags) newClient(url string, j client.Journal, protocol string) *client.Client {
	return client.New(url, f.clientOptions(j, protocol))
}

// clientOptions are the options of newClient's clients.
func (f *clientFlags) clientOptions(j client.Journal, protocol string) *client.Options {
	return &client.Options{
		ProtocolVersion: protocol,
		Token:           f.tokenValue(),
		Journal:         j,
		ClientInfo:      &mcp.Implementation{Name: "mcptasks", Version: version},
		RequestTimeout:  requestTimeout,
	}
}

// answersHelp is the help of --answers, of call and wait.
const answersHelp = "`responses` to give, instead of asking, to the questions whose input keys they name: a JSON object of input key to result object, as \"mcptasks answer --json\" takes, each used once; for a script, and for a question asked before the task exists, which has no task id to answer with \"mcptasks answer\""

// onServer returns the entries of --url's server, or all without --url.
func (f *clientFlags) onServer(entries []client.Entry) []client.Entry {
	if f.url == "" {
		return entries
	}
	var here []client.Entry
	for _, e := range entries {
		if e.ServerURL == f.url {
			here = append(here, e)
		}
	}
	return here
}

// locate finds the task id (or a unique prefix of one) in the journal and
// returns its server URL and entry. With --url, the journal only supplies
// the entry, if it has one.
func (f *clientFlags) locate(ctx context.Context, j client.Journal, id string) (string, *client.Entry, error) {
	if id == "" {
		return "", nil, usageError("empty task id")
	}
	if strings.HasPrefix(id, pendingPrefix) {
		return "", nil, usageError("%s names a pending call, which has no task id yet: \"mcptasks tasks --resume\" learns its task, \"mcptasks tasks --forget %s\" drops it", id, id)
	}
	if f.url != "" {
		if err := checkEndpoint("--url", f.url); err != nil {
			return "", nil, err
		}
	}
	entries, err := j.List(ctx)
	if err != nil {
		if f.url != "" {
			return f.url, nil, nil
		}
		return "", nil, &exitError{code: exitUsage, err: err}
	}
	here := f.onServer(entries)
	// With --url, the id is taken as given.
	matches, exact := lookup(here, id, taskName, f.url == "")
	switch {
	case len(matches) == 1:
		e := matches[0]
		return e.ServerURL, &e, nil
	case f.url != "":
		return f.url, nil, nil
	case len(matches) == 0:
		return "", nil, usageError("task %s is not in the journal; pass the server's --url", id)
	}
	return "", nil, usageError("task id %s is ambiguous: %s", id, ambiguity(matches, exact, taskName))
}

// taskName is the name of a task's entry in the journal: its id ("" for a
// pending call, which no id names).
func taskName(e client.Entry) string { return e.TaskID }

// lookup returns the entries that id names, as the commands take a task
// id: those whose name is id, else, with prefixes, those whose name starts
// with it; exact reports which.
func lookup(entries []client.Entry, id string, name func(client.Entry) string, prefixes bool) (matches []client.Entry, exact bool) {
	var byPrefix []client.Entry
	for _, e := range entries {
		switch n := name(e); {
		case n == id:
			matches = append(matches, e)
		case prefixes && strings.HasPrefix(n, id):
			byPrefix = append(byPrefix, e)
		}
	}
	if len(matches) > 0 {
		return matches, true
	}
	return byPrefix, false
}

// ambiguity lists the entries that one id names, each with its server,
// and says what to pass instead.
func ambiguity(matches []client.Entry, exact bool, name func(client.Entry) string) string {
	var ids []string
	for _, e := range matches {
		ids = append(ids, name(e)+" ("+e.ServerURL+")")
	}
	hint := "a longer id" // --url would take the prefix as the whole id
	if exact {
		hint = "the server's --url" // one id on several servers
	}
	return strings.Join(ids, ", ") + "; pass " + hint
}

// checkEndpoint refuses a value of name that is not an http(s) URL.
func checkEndpoint(name, endpoint string) error {
	if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageError("%s %q: want the server's MCP endpoint, like http://127.0.0.1:8080/mcp", name, endpoint)
	}
	return nil
}

// openTask finds the task that id names, in the journal or at --url, and
// returns a handle on it with a client for its server, and its journal
// entry (nil if it has none).
func (f *clientFlags) openTask(ctx context.Context, id string) (*client.Task, *client.Entry, error) {
	j, err := f.openJournal()
	if err != nil {
		return nil, nil, err
	}
	endpoint, entry, err := f.locate(ctx, j, id)
	if err != nil {
		return nil, nil, err
	}
	protocol := "" // find out
	if entry != nil {
		// A task is served in the revision that created it.
		protocol = cmp.Or(entry.Protocol, client.ProtocolVersion)
	}
	return taskOf(f.newClient(endpoint, j, protocol), id, entry), entry, nil
}

// taskOf returns the handle of task id (its full id and tool from the
// journal's entry, if there is one).
func taskOf(c *client.Client, id string, entry *client.Entry) *client.Task {
	if entry == nil {
		return c.Task(id)
	}
	t := c.Task(entry.TaskID)
	t.Tool = entry.Tool
	return t
}

// streams are a command's standard streams and what they are connected
// to.
type streams struct {
	in       io.Reader
	out, err io.Writer
	// inTTY and outTTY say whether stdin and stdout are terminals.
	inTTY, outTTY bool
	// width returns stdout's width in columns (0 if unknown).
	width func() int
}

// osStreams are the process's standard streams.
func osStreams() *streams {
	return &streams{
		in: os.Stdin, out: os.Stdout, err: os.Stderr,
		inTTY:  xterm.IsTerminal(int(os.Stdin.Fd())),
		outTTY: xterm.IsTerminal(int(os.Stdout.Fd())),
		width: func() int {
			w, _, err := xterm.GetSize(int(os.Stdout.Fd()))
			if err != nil {
				return 0
			}
			return w
		},
	}
}
