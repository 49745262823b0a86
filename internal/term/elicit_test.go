package term

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestPrompter_Elicit(t *testing.T) {
	t.Parallel()
	const confirm = `{"type":"object","properties":{"overwrite":{"type":"boolean"}},"required":["overwrite"]}`
	const optional = `{"type":"object","properties":{"name":{"type":"string"},"confirm":{"type":"boolean"}}}`
	const withDefaults = `{"type":"object","properties":{
		"rows":{"type":"integer","minimum":1,"default":10},
		"format":{"type":"string","enum":["csv","json"],"default":"csv"},
		"note":{"type":"string","default":"none"}},"required":["rows","format"]}`
	for _, tc := range []struct {
		name   string
		schema string
		input  string
		want   *mcp.ElicitResult
		err    error
		output []string // parts of what the person saw, in order
	}{
		{
			name: "BooleanYes", schema: confirm, input: "y\n",
			want:   &mcp.ElicitResult{Action: "accept", Content: map[string]any{"overwrite": true}},
			output: []string{"? Overwrite?\n", "  overwrite [y/n]: "},
		},
		{
			name: "InvalidThenValid", schema: confirm, input: "perhaps\nno\n",
			want:   &mcp.ElicitResult{Action: "accept", Content: map[string]any{"overwrite": false}},
			output: []string{"overwrite: answer y or n", "overwrite [y/n]: "},
		},
		{
			name: "RequiredEmptyThenAnswer", schema: confirm, input: "\n\nyes\n",
			want:   &mcp.ElicitResult{Action: "accept", Content: map[string]any{"overwrite": true}},
			output: []string{"overwrite is required. Answer it, or decline or cancel the whole request? [a]nswer, [d]ecline, [c]ancel [a]: ", "overwrite [y/n]: "},
		},
		{
			name: "RequiredEmptyThenDecline", schema: confirm, input: "\nd\n",
			want: &mcp.ElicitResult{Action: "decline"},
		},
		{
			name: "RequiredEmptyThenCancel", schema: confirm, input: "\ncancel\n",
			want: &mcp.ElicitResult{Action: "cancel"},
		},
		{
			name: "BadMenuAnswer", schema: confirm, input: "\nx\nd\n",
			want:   &mcp.ElicitResult{Action: "decline"},
			output: []string{"Please type one of: a, d, c."},
		},
		{
			name: "DefaultsOnEmpty", schema: withDefaults, input: "\n\n\n",
			want:   &mcp.ElicitResult{Action: "accept", Content: map[string]any{"rows": int64(10), "format": "csv", "note": "none"}},
			output: []string{"    1) csv\n    2) json\n", "format [1-2, default 1 (csv)]: "},
		},
		{
			name: "EnumByNumber", schema: withDefaults, input: "0\n5\n2\nhi\n",
			want:   &mcp.ElicitResult{Action: "accept", Content: map[string]any{"rows": int64(5), "format": "json", "note": "hi"}},
			output: []string{"rows: 0 is less than the minimum 1"},
		},
		{
			name: "OptionalFieldsThenSend", schema: optional, input: "Ada\n\n\n",
			want:   &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}},
			output: []string{"name (optional): ", "confirm (optional) [y/n]: ", "Send? [y]es, [d]ecline, [c]ancel [y]: "},
		},
		{
			name: "OptionalFieldsThenDecline", schema: optional, input: "\n\ndecline\n",
			want: &mcp.ElicitResult{Action: "decline"},
		},
		{
			name: "NoFields", schema: `{"type":"object","properties":{}}`, input: "c\n",
			want:   &mcp.ElicitResult{Action: "cancel"},
			output: []string{"Accept? [y]es, [d]ecline, [c]ancel [y]: "},
		},
		{
			name: "EndOfInput", schema: confirm, input: "",
			err: io.EOF,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out strings.Builder
			p := &Prompter{In: NewLines(strings.NewReader(tc.input)), Out: &out}
			got, err := p.Elicit(context.Background(), &Elicitation{Message: "Overwrite?", Schema: json.RawMessage(tc.schema)})
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Elicit: %v, %v; want error %v", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Elicit: %v\noutput:\n%s", err, out.String())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Elicit = %#v, want %#v\noutput:\n%s", got, tc.want, out.String())
			}
			rest := out.String()
			for _, part := range tc.output {
				i := strings.Index(rest, part)
				if i < 0 {
					t.Fatalf("output lacks %q (in order); output:\n%s", part, out.String())
				}
				rest = rest[i+len(part):]
			}
		})
	}
}

func TestPrompter_ElicitURL(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	p := &Prompter{In: NewLines(strings.NewReader("y\n")), Out: &out}
	got, err := p.Elicit(context.Background(), &Elicitation{Mode: "url", Message: "Sign in", URL: "https://example.com/auth"})
	if err != nil || got.Action != "accept" {
		t.Fatalf("Elicit = %v, %v; want accept", got, err)
	}
	if !strings.Contains(out.String(), "Open https://example.com/auth") {
		t.Errorf("output %q lacks the URL", out.String())
	}
}

// TestPrompter_ControlCharacters: what a server sends reaches the terminal
// without the control characters a terminal acts on (an OSC 52 clipboard
// write, a cursor move), in the question, its URL, a form's fields, and
// the status line.
func TestPrompter_ControlCharacters(t *testing.T) {
	t.Parallel()
	const esc = "\x1b]52;c;ZXZpbA==\x07\x1b[2J\u009b1A"
	var out strings.Builder
	p := &Prompter{In: NewLines(strings.NewReader("y\nx\n")), Out: &out}
	if _, err := p.Elicit(context.Background(), &Elicitation{Mode: "url", Message: "Sign in" + esc, URL: "https://example.com/" + esc}); err != nil {
		t.Fatal(err)
	}
	schema := json.RawMessage(`{"type":"object","properties":{"n` + jsonEscape(esc) + `":{"type":"string","title":"Name` + jsonEscape(esc) + `","description":"D` + jsonEscape(esc) + `"}},"required":["n` + jsonEscape(esc) + `"]}`)
	if _, err := p.Elicit(context.Background(), &Elicitation{Mode: "form", Message: "Who" + esc, Schema: schema}); err != nil {
		t.Fatal(err)
	}
	s := NewStatusLine(io.Discard, func() int { return 200 }, time.Now())
	s.Set("working", "step"+esc)
	for name, got := range map[string]string{"prompt": out.String(), "status line": s.Text()} {
		if strings.ContainsAny(got, "\x1b\x07\u009b") {
			t.Errorf("%s: %q carries control characters", name, got)
		}
	}
}

// jsonEscape returns s as the inside of a JSON string.
func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func TestPrompter_Interrupt(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe() // input that never comes
	defer w.Close()
	intr := make(chan struct{}, 1)
	intr <- struct{}{}
	p := &Prompter{In: NewLines(r), Out: io.Discard, Interrupt: intr}
	if _, err := p.Ask(context.Background(), "? "); !errors.Is(err, ErrInterrupted) {
		t.Errorf("Ask: %v, want ErrInterrupted", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Ask(ctx, "? "); !errors.Is(err, context.Canceled) {
		t.Errorf("Ask: %v, want context.Canceled", err)
	}
	// The reader is still there: a line typed later reaches the next
	// question.
	go func() { _, _ = io.WriteString(w, "late\n") }()
	if s, err := p.Ask(context.Background(), "? "); s != "late" || err != nil {
		t.Errorf("Ask = %q, %v; want the late line", s, err)
	}
}

func TestParseElicitation(t *testing.T) {
	t.Parallel()
	e, err := ParseElicitation(json.RawMessage(`{"mode":"form","message":"m","requestedSchema":{"type":"object"}}`))
	if err != nil || e.Message != "m" || e.Mode != "form" || string(e.Schema) != `{"type":"object"}` {
		t.Errorf("ParseElicitation = %+v, %v", e, err)
	}
	if _, err := ParseElicitation(json.RawMessage(`[1]`)); err == nil {
		t.Error("ParseElicitation of an array: no error")
	}
}
