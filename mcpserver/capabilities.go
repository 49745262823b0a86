package mcpserver

//lint:file-ignore SA1019 sampling and roots are deprecated features, but still client capabilities a server must check

import (
	"encoding/json"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcptasks/mcptasks/task"
)

// This file is the one implementation of the checks of client
// capabilities: what a request declares, what a tool or an input request
// needs, and the -32021 error that names what is missing. A server must not
// rely on a capability the request did not declare (TASKS-SPEC §2.4), nor
// send an input request of a kind the client did not declare (§2.9).

// metaClientCapabilities is the _meta key of the client's capabilities.
const metaClientCapabilities = mcp.MetaKeyClientCapabilities

// DeclaresTasks reports whether a request declares the Tasks extension: its
// protocol version has the extension ([task.ProtocolVersion] or later) and
// the clientCapabilities of its own _meta, given as JSON, list it. What
// earlier requests declared never counts (TASKS-SPEC §3.2).
func DeclaresTasks(protocolVersion string, clientCapabilities json.RawMessage) bool {
	if protocolVersion < task.ProtocolVersion {
		return false
	}
	// Every poll asks, twice (the request, and the task's era): decode
	// only what the answer needs. tasksCaps refuses what clientCaps
	// refuses, so the answer is parseCaps(…).has().extension(ExtensionID).
	var c tasksCaps
	if len(clientCapabilities) > 0 && decodeJSON(clientCapabilities, &c) != nil {
		return false
	}
	return c.Extensions != nil && c.Extensions.Tasks != nil
}

// tasksCaps is clientCaps with only the Tasks extension read of the
// extensions: decoding their map costs more than the rest of a poll's
// decode.
type tasksCaps struct {
	baseCaps
	Extensions *struct {
		Tasks json.RawMessage `json:"io.modelcontextprotocol/tasks"`
	} `json:"extensions"`
}

// rawClientCapabilities returns the clientCapabilities of a go-sdk
// request's _meta (see sdkMeta) as the client sent them ({} if absent), to
// be stored with a task or checked.
func rawClientCapabilities(meta anyMeta) json.RawMessage {
	v, ok := meta[metaClientCapabilities]
	if !ok {
		return json.RawMessage(`{}`)
	}
	b, err := json.Marshal(v) // a value decoded from JSON always encodes
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}

// baseCaps is what clientCaps and tasksCaps read besides the extensions.
type baseCaps struct {
	Elicitation *struct {
		Form json.RawMessage `json:"form"`
		URL  json.RawMessage `json:"url"`
	} `json:"elicitation"`
	Sampling json.RawMessage `json:"sampling"`
	Roots    json.RawMessage `json:"roots"`
}

// clientCaps is what the server reads of a request's clientCapabilities.
type clientCaps struct {
	baseCaps
	Extensions map[string]json.RawMessage `json:"extensions"`
}

// parseCaps decodes clientCapabilities JSON; what it cannot read counts as
// not declared.
func parseCaps(raw json.RawMessage) clientCaps {
	var c clientCaps
	if len(raw) > 0 && decodeJSON(raw, &c) != nil {
		return clientCaps{}
	}
	return c
}

// has returns the capabilities c declares. An elicitation capability that
// names no mode, {}, means form mode only.
func (c clientCaps) has() needs {
	var n needs
	if e := c.Elicitation; e != nil {
		n.url = present(e.URL)
		n.form = present(e.Form) || !n.url
	}
	n.sampling = present(c.Sampling)
	n.roots = present(c.Roots)
	for k := range c.Extensions {
		n.extensions = append(n.extensions, k)
	}
	slices.Sort(n.extensions)
	return n
}

func present(b json.RawMessage) bool { return len(b) > 0 && string(b) != "null" }

// needs is a set of client capabilities: those a request declares, or
// those some work needs.
type needs struct {
	form, url, sampling, roots bool // elicitation in form mode, in URL mode; sampling; roots
	extensions                 []string
}

// needsOf returns the capabilities caps names, as [ToolOptions.Requires]
// gives them. An elicitation capability that names no mode means form
// mode, as on the wire.
func needsOf(caps *mcp.ClientCapabilities) needs {
	var n needs
	if caps == nil {
		return n
	}
	if e := caps.Elicitation; e != nil {
		n.url = e.URL != nil
		n.form = e.Form != nil || !n.url
	}
	n.sampling = caps.Sampling != nil
	n.roots = caps.RootsV2 != nil || caps.Roots.ListChanged
	for k := range caps.Extensions {
		n.extensions = append(n.extensions, k)
	}
	slices.Sort(n.extensions)
	return n
}

// inputNeeds returns the capability an input request needs: elicitation
// in its mode, sampling or roots.
func inputNeeds(r mcp.InputRequest) needs {
	switch r := r.(type) {
	case *mcp.ElicitParams:
		if elicitMode(r) == "url" {
			return needs{url: true}
		}
		return needs{form: true}
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
		return needs{sampling: true}
	case *mcp.ListRootsParams:
		return needs{roots: true}
	}
	return needs{}
}

// elicitMode returns the mode of an elicitation: as given, or, as go-sdk
// infers it, "url" when it has a URL or an elicitation id and "form"
// otherwise.
func elicitMode(p *mcp.ElicitParams) string {
	switch {
	case p.Mode != "":
		return p.Mode
	case p.URL != "" || p.ElicitationID != "":
		return "url"
	}
	return "form"
}

// inputRequestsNeeds returns the capabilities a set of input requests
// needs.
func inputRequestsNeeds(reqs mcp.InputRequestMap) needs {
	var n needs
	for _, r := range reqs {
		n = n.union(inputNeeds(r))
	}
	return n
}

// declaresTasks reports whether a request of the protocol version that
// declares the capabilities n declares the Tasks extension: what
// [DeclaresTasks] reports of the capabilities' JSON.
func (n needs) declaresTasks(version string) bool {
	return version >= task.ProtocolVersion && n.extension(task.ExtensionID)
}

func (n needs) extension(id string) bool { return slices.Contains(n.extensions, id) }

func (n needs) empty() bool {
	return !n.form && !n.url && !n.sampling && !n.roots && len(n.extensions) == 0
}

func (n needs) union(m needs) needs {
	u := needs{form: n.form || m.form, url: n.url || m.url, sampling: n.sampling || m.sampling, roots: n.roots || m.roots}
	u.extensions = append(slices.Clone(n.extensions), m.extensions...)
	slices.Sort(u.extensions)
	u.extensions = slices.Compact(u.extensions)
	return u
}

// minus returns what n needs that have lacks.
func (n needs) minus(have needs) needs {
	m := needs{form: n.form && !have.form, url: n.url && !have.url, sampling: n.sampling && !have.sampling, roots: n.roots && !have.roots}
	for _, e := range n.extensions {
		if !have.extension(e) {
			m.extensions = append(m.extensions, e)
		}
	}
	return m
}

// names returns the paths of n's capabilities in clientCapabilities, as a
// message names them.
func (n needs) names() []string {
	var s []string
	if n.form {
		s = append(s, "elicitation.form")
	}
	if n.url {
		s = append(s, "elicitation.url")
	}
	if n.sampling {
		s = append(s, "sampling")
	}
	if n.roots {
		s = append(s, "roots")
	}
	for _, e := range n.extensions {
		s = append(s, `extensions["`+e+`"]`)
	}
	return s
}

// capabilitiesJSON returns n as a ClientCapabilities object, each
// capability with empty settings.
func (n needs) capabilitiesJSON() map[string]any {
	m := map[string]any{}
	if n.form || n.url {
		e := map[string]any{}
		if n.form {
			e["form"] = struct{}{}
		}
		if n.url {
			e["url"] = struct{}{}
		}
		m["elicitation"] = e
	}
	if n.sampling {
		m["sampling"] = struct{}{}
	}
	if n.roots {
		m["roots"] = struct{}{}
	}
	if len(n.extensions) > 0 {
		e := map[string]any{}
		for _, id := range n.extensions {
			e[id] = struct{}{}
		}
		m["extensions"] = e
	}
	return m
}
