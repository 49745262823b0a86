package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/mcptasks/mcptasks/client"
	"github.com/mcptasks/mcptasks/internal/term"
	"github.com/mcptasks/mcptasks/task"
)

type answerFlags struct {
	clientFlags
	responses string
	decline   bool
	cancel    bool
}

func newAnswerCmd() *cobra.Command {
	var f answerFlags
	cmd := &cobra.Command{
		Use:   "answer ID [KEY] [field=value ...]",
		Short: "Answer a task's question (tasks/update) without a terminal",
		Long: `answer sends the answer to a question of a task that waits for input
(status input_required), as tasks/update. It is how a script, or a person
on another machine, answers what "mcptasks call" could not ask (exit 7).

KEY is the question's input key, as "mcptasks get ID" shows it; it may be left
out when the task asks one question. The field=value pairs fill the question's
form: each value is read as its field's type says (a boolean takes y/n/true/
false, an enum its value or its number from 1), the form's defaults fill the
fields left out, and required fields must be given. The answer is sent with
action "accept"; --decline or --cancel send that action instead, with no
fields.

--json sends responses as they are: a JSON object of input key to result
object (for elicitation/create, an ElicitResult such as {"action":"accept",
"content":{...}}). It is the way to answer several questions at once, or
requests other than forms.

` + idHelp + `

Then follow the task with "mcptasks wait ID": questions answered here are not
asked again. When stdout is not a terminal, answer prints one JSON object:
{"type":"answered","taskId":...,"keys":[...]}.

` + exitCodesHelp(exitOK, exitUsage, exitTransport),
		Example: `  mcptasks answer AaJDdmLSHe overwrite=y
  mcptasks answer AaJDdmLSHe confirm-overwrite overwrite=true
  mcptasks answer AaJDdmLSHe --decline
  mcptasks answer AaJDdmLSHe --json '{"first":{"action":"accept","content":{"name":"Ada"}},"second":{"action":"decline"}}'`,
		Args: cobra.MinimumNArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			return runAnswer(cmd.Context(), &f, args[0], args[1:], osStreams())
		}),
	}
	fl := cmd.Flags()
	f.register(fl, true)
	fl.StringVar(&f.responses, "json", "", "`responses` to send as they are: a JSON object of input key to result object")
	fl.BoolVar(&f.decline, "decline", false, "decline the question (action \"decline\")")
	fl.BoolVar(&f.cancel, "cancel", false, "dismiss the question (action \"cancel\")")
	return withUsageHint(cmd)
}

func runAnswer(ctx context.Context, f *answerFlags, id string, rest []string, s *streams) error {
	key := ""
	if len(rest) > 0 && !strings.Contains(rest[0], "=") {
		key, rest = rest[0], rest[1:]
	}
	if f.decline && f.cancel {
		return usageError("--decline and --cancel exclude each other")
	}
	if f.responses != "" && (key != "" || len(rest) > 0 || f.decline || f.cancel) {
		return usageError("--json takes the whole answer: give no KEY, fields, --decline or --cancel with it")
	}
	if (f.decline || f.cancel) && len(rest) > 0 {
		return usageError("--decline and --cancel take no fields")
	}
	responses := map[string]any{}
	if f.responses != "" { // checked before the task is looked up
		raw, err := parseResponses("--json", f.responses)
		if err != nil {
			return err
		}
		for k, v := range raw {
			responses[k] = v
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*requestTimeout)
	defer cancel()
	t, entry, err := f.openTask(ctx, id)
	if err != nil {
		return err
	}
	if f.responses == "" {
		r, err := formAnswer(ctx, t, key, rest, f)
		if err != nil {
			return err
		}
		key = r.key
		responses[key] = r.result
	}
	if err := t.Update(ctx, responses); err != nil {
		return explainTaskError(t.ID, err)
	}
	keys := sortedKeys(responses)
	if !s.outTTY {
		b, _ := json.Marshal(struct {
			Type   string   `json:"type"`
			TaskID string   `json:"taskId"`
			Keys   []string `json:"keys"`
		}{"answered", t.ID, keys})
		fmt.Fprintf(s.out, "%s\n", b)
		return nil
	}
	fmt.Fprintf(s.out, "Answered %s of task %s. Follow it with: %s\n", strings.Join(keys, ", "), t.ID, f.hint("wait", t.ID, t.ServerURL, entry != nil))
	return nil
}

// parseResponses parses the value of flag: a JSON object of input key to
// result object (for elicitation/create, an ElicitResult), as tasks/update
// and an input round's inputResponses take them.
func parseResponses(flag, value string) (map[string]json.RawMessage, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(value), &raw); err != nil {
		return nil, usageError("%s: want an object of input key to result object: %v", flag, err)
	}
	if len(raw) == 0 {
		return nil, usageError("%s: no responses; give the input key of each answer, e.g. {\"confirm\": {\"action\": \"accept\", \"content\": {…}}}", flag)
	}
	for k, v := range raw {
		if b := bytes.TrimSpace(v); len(b) == 0 || b[0] != '{' {
			return nil, usageError("%s: the response of %q is not a JSON object", flag, k)
		}
	}
	return raw, nil
}

// parseAnswers parses --answers of call and wait (none if "").
func parseAnswers(value string) (map[string]json.RawMessage, error) {
	if value == "" {
		return nil, nil
	}
	return parseResponses("--answers", value)
}

// preparedInput answers, with responses, the questions whose input keys
// it holds, each once (a key asked again goes on), and hands the others
// to next: the terminal's prompts, or, without them (nil), it ends the
// wait with an *client.InputRequiredError, as with no handler at all.
func preparedInput(responses map[string]json.RawMessage, next client.InputHandler) client.InputHandler {
	if len(responses) == 0 {
		return next
	}
	responses = maps.Clone(responses)
	var mu sync.Mutex
	return client.InputHandlerFunc(func(ctx context.Context, key string, req *client.InputRequest) (any, error) {
		mu.Lock()
		r, ok := responses[key]
		delete(responses, key)
		mu.Unlock()
		switch {
		case ok:
			return r, nil
		case next != nil:
			return next.HandleInput(ctx, key, req)
		}
		return nil, &client.InputRequiredError{TaskID: req.TaskID, Requests: map[string]*client.InputRequest{key: req}}
	})
}

type keyedAnswer struct {
	key    string
	result *mcp.ElicitResult
}

// formAnswer reads the task's question KEY (or its only one) and builds
// the answer from field=value pairs, checked against the form.
func formAnswer(ctx context.Context, t *client.Task, key string, pairs []string, f *answerFlags) (*keyedAnswer, error) {
	st, err := t.Get(ctx)
	if err != nil {
		return nil, explainTaskError(t.ID, err)
	}
	if st.Status != task.InputRequired {
		return nil, usageError("task %s is %s: it asks no question", t.ID, st.Status)
	}
	if key == "" {
		if len(st.InputRequests) != 1 {
			return nil, usageError("task %s asks %d questions (%s): name the KEY to answer", t.ID, len(st.InputRequests), strings.Join(sortedKeys(st.InputRequests), ", "))
		}
		key = sortedKeys(st.InputRequests)[0]
	}
	req, ok := st.InputRequests[key]
	if !ok {
		return nil, usageError("task %s asks no question %q; it asks: %s", t.ID, key, strings.Join(sortedKeys(st.InputRequests), ", "))
	}
	switch {
	case f.decline:
		return &keyedAnswer{key, &mcp.ElicitResult{Action: term.Decline}}, nil
	case f.cancel:
		return &keyedAnswer{key, &mcp.ElicitResult{Action: term.Cancel}}, nil
	}
	if req.Method != client.MethodElicit {
		return nil, usageError("question %q is a %s request: answer it with --json", key, req.Method)
	}
	e, err := term.ParseElicitation(req.Params)
	if err != nil {
		return nil, fmt.Errorf("question %q: %w", key, err)
	}
	if e.Mode == "url" {
		if len(pairs) > 0 {
			return nil, usageError("question %q asks to visit %s and takes no fields", key, e.URL)
		}
		return &keyedAnswer{key, &mcp.ElicitResult{Action: term.Accept}}, nil
	}
	form, err := term.ParseSchema(e.Schema)
	if err != nil {
		return nil, fmt.Errorf("question %q: %w", key, err)
	}
	content, err := formContent(form, pairs)
	if err != nil {
		return nil, usageError("question %q: %v", key, err)
	}
	return &keyedAnswer{key, &mcp.ElicitResult{Action: term.Accept, Content: content}}, nil
}

// formContent fills form from field=value pairs, then its defaults, and
// checks that every required field has a value.
func formContent(form *term.Form, pairs []string) (map[string]any, error) {
	content := map[string]any{}
	for _, p := range pairs {
		name, value, ok := strings.Cut(p, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want field=value", p)
		}
		fl := form.Field(name)
		if fl == nil {
			var names []string
			for _, fl := range form.Fields {
				names = append(names, fl.Name)
			}
			return nil, fmt.Errorf("no field %q; the form has: %s", name, strings.Join(names, ", "))
		}
		v, err := fl.Parse(value)
		if err != nil {
			return nil, err
		}
		content[name] = v
	}
	for _, fl := range form.Fields {
		if _, ok := content[fl.Name]; !ok && fl.Default != nil {
			content[fl.Name] = fl.Default
		}
	}
	if err := form.Check(content); err != nil {
		return nil, err
	}
	return content, nil
}
