package term

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Actions of an elicitation result.
const (
	Accept  = "accept"
	Decline = "decline"
	Cancel  = "cancel"
)

// Elicitation is what an elicitation/create request asks: a form (Mode
// "form" or "") or a URL to visit (Mode "url").
type Elicitation struct {
	Message string          `json:"message"`
	Mode    string          `json:"mode"`
	Schema  json.RawMessage `json:"requestedSchema"`
	URL     string          `json:"url"`
}

// ParseElicitation decodes the params of an elicitation/create request.
func ParseElicitation(params json.RawMessage) (*Elicitation, error) {
	var e Elicitation
	if len(params) > 0 {
		if err := json.Unmarshal(params, &e); err != nil {
			return nil, fmt.Errorf("elicitation params: %w", err)
		}
	}
	return &e, nil
}

var (
	requiredChoices = []Choice{{"a", "answer"}, {"d", "decline"}, {"c", "cancel"}}
	sendChoices     = []Choice{{"y", "yes"}, {"d", "decline"}, {"c", "cancel"}}
)

// Elicit asks the person for the answer to e and returns it.
//
// A form asks its fields one by one, in the schema's order, each until its
// answer is valid. An empty answer takes the field's default, leaves out
// an optional field, and for a required field offers to answer it, decline
// the request or cancel it. A form without required fields ends with
// "Send?", which can decline or cancel too. A URL request shows the URL
// and asks whether the person accepts.
func (p *Prompter) Elicit(ctx context.Context, e *Elicitation) (*mcp.ElicitResult, error) {
	fmt.Fprintf(p.Out, "? %s\n", safe(strings.TrimSpace(e.Message)))
	if e.Mode == "url" {
		fmt.Fprintf(p.Out, "  Open %s\n", safe(e.URL))
		k, err := p.Choose(ctx, "  Done?", sendChoices, "")
		if err != nil {
			return nil, err
		}
		return &mcp.ElicitResult{Action: action(k)}, nil
	}
	form, err := ParseSchema(e.Schema)
	if err != nil {
		return nil, err
	}
	content := map[string]any{}
	for _, f := range form.Fields {
		if f.Description != "" {
			fmt.Fprintf(p.Out, "  %s\n", safe(f.Description))
		}
		if f.Kind == Enum || f.Kind == MultiEnum {
			for i, o := range f.Options {
				fmt.Fprintf(p.Out, "    %d) %s\n", i+1, safe(o.label()))
			}
		}
		for {
			s, err := p.Ask(ctx, "  "+f.Prompt())
			if err != nil {
				return nil, err
			}
			if s == "" {
				if f.Default != nil {
					content[f.Name] = f.Default
					break
				}
				if !f.Required {
					break
				}
				k, err := p.Choose(ctx, "  "+cmpOr(f.Title, f.Name)+" is required. Answer it, or decline or cancel the whole request?", requiredChoices, "a")
				if err != nil {
					return nil, err
				}
				if k != "a" {
					return &mcp.ElicitResult{Action: action(k)}, nil
				}
				continue
			}
			v, err := f.Parse(s)
			if err != nil {
				fmt.Fprintf(p.Out, "  %s\n", safe(err.Error()))
				continue
			}
			content[f.Name] = v
			break
		}
	}
	if !form.HasRequired() {
		q := "  Send?"
		if len(form.Fields) == 0 {
			q = "  Accept?"
		}
		k, err := p.Choose(ctx, q, sendChoices, "y")
		if err != nil {
			return nil, err
		}
		if k != "y" {
			return &mcp.ElicitResult{Action: action(k)}, nil
		}
	}
	return &mcp.ElicitResult{Action: Accept, Content: content}, nil
}

func action(key string) string {
	switch key {
	case "y", "a":
		return Accept
	case "d":
		return Decline
	}
	return Cancel
}
