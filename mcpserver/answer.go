package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// checkAnswer checks one tasks/update inputResponses entry against the
// input request it answers, as the store hands them to it (see
// store.AnswerCheck): an elicitation result needs an action, and on accept
// of a form, content valid against the requested schema; a sampling result
// needs a role, content and the model; a roots result needs roots, each
// with a uri. The error names the field at fault, from the entry
// (TASKS-SPEC §3.9: malformed responses get -32602, and the key stays
// open).
func checkAnswer(_ string, request, response json.RawMessage) error {
	var req struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(request, &req); err != nil {
		return nil // not a request this server stored: nothing to check it against
	}
	switch req.Method {
	case "elicitation/create":
		return checkElicitResult(req.Params, response)
	case "sampling/createMessage":
		return checkSamplingResult(response)
	case "roots/list":
		return checkRootsResult(response)
	}
	return nil
}

func checkElicitResult(params, response json.RawMessage) error {
	var r struct {
		Action  *string         `json:"action"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(response, &r); err != nil {
		return fmt.Errorf("must be an elicitation result object: %v", err)
	}
	switch {
	case r.Action == nil:
		return errors.New(`action is required: "accept", "decline" or "cancel"`)
	case *r.Action != "accept" && *r.Action != "decline" && *r.Action != "cancel":
		return fmt.Errorf(`action must be "accept", "decline" or "cancel", not %q`, *r.Action)
	case *r.Action != "accept":
		return nil
	}
	var p struct {
		Mode            string          `json:"mode"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
	}
	if json.Unmarshal(params, &p) != nil || p.Mode == "url" || len(p.RequestedSchema) == 0 {
		return nil // a URL elicitation: accept carries no content
	}
	var content any = map[string]any{}
	if len(r.Content) > 0 && string(r.Content) != "null" {
		if err := json.Unmarshal(r.Content, &content); err != nil {
			return fmt.Errorf("content: %v", err)
		}
		if _, ok := content.(map[string]any); !ok {
			return errors.New("content must be an object holding the form's fields")
		}
	}
	var schema jsonschema.Schema
	if err := json.Unmarshal(p.RequestedSchema, &schema); err != nil {
		return nil // the server's own schema; go-sdk has checked what it accepts
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		return nil
	}
	if err := resolved.Validate(content); err != nil {
		return fmt.Errorf("content does not match the requested schema: %v", err)
	}
	return nil
}

func checkSamplingResult(response json.RawMessage) error {
	var r struct {
		Role    *string         `json:"role"`
		Content json.RawMessage `json:"content"`
		Model   *string         `json:"model"`
	}
	if err := json.Unmarshal(response, &r); err != nil {
		return fmt.Errorf("must be a sampling result object: %v", err)
	}
	switch {
	case r.Role == nil:
		return errors.New(`role is required: "user" or "assistant"`)
	case *r.Role != "user" && *r.Role != "assistant":
		return fmt.Errorf(`role must be "user" or "assistant", not %q`, *r.Role)
	case r.Model == nil:
		return errors.New("model is required: the name of the model that sampled")
	case len(r.Content) == 0 || string(r.Content) == "null":
		return errors.New("content is required: a content block or an array of them")
	}
	blocks := []json.RawMessage{r.Content}
	if strings.HasPrefix(strings.TrimSpace(string(r.Content)), "[") {
		if err := json.Unmarshal(r.Content, &blocks); err != nil {
			return fmt.Errorf("content: %v", err)
		}
	}
	for i, b := range blocks {
		var c struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(b, &c) != nil || c.Type == "" {
			if len(blocks) == 1 && !strings.HasPrefix(strings.TrimSpace(string(r.Content)), "[") {
				return errors.New("content must be a content block with a type")
			}
			return fmt.Errorf("content[%d] must be a content block with a type", i)
		}
	}
	return nil
}

func checkRootsResult(response json.RawMessage) error {
	var r struct {
		Roots *[]json.RawMessage `json:"roots"`
	}
	if err := json.Unmarshal(response, &r); err != nil {
		return fmt.Errorf("must be a roots result object: %v", err)
	}
	if r.Roots == nil {
		return errors.New("roots is required: an array of roots")
	}
	for i, b := range *r.Roots {
		var root struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(b, &root) != nil || root.URI == "" {
			return fmt.Errorf("roots[%d].uri is required", i)
		}
	}
	return nil
}
