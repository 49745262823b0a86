package term

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// Prompter asks questions: it writes a prompt to Out and reads the answer
// from In.
type Prompter struct {
	In  *Lines
	Out io.Writer
	// Interrupt, if set, ends a pending question with ErrInterrupted when
	// it receives (the caller forwards Ctrl-C there).
	Interrupt <-chan struct{}
}

// Ask writes prompt and returns the line typed, trimmed of surrounding
// spaces.
func (p *Prompter) Ask(ctx context.Context, prompt string) (string, error) {
	fmt.Fprint(p.Out, safe(prompt))
	s, err := p.In.Next(ctx, p.Interrupt)
	if err != nil {
		fmt.Fprintln(p.Out)
		return "", err
	}
	return strings.TrimSpace(s), nil
}

// Choice is one answer of [Prompter.Choose]: typed as its Key (one
// letter) or its Label, or any prefix of the label.
type Choice struct {
	Key   string
	Label string
}

// Choose asks question until one of choices is typed, and returns its
// Key. An empty answer takes def (a Key), unless def is "".
func (p *Prompter) Choose(ctx context.Context, question string, choices []Choice, def string) (string, error) {
	var opts []string
	for _, c := range choices {
		if rest, ok := strings.CutPrefix(c.Label, c.Key); ok {
			opts = append(opts, "["+c.Key+"]"+rest)
		} else {
			opts = append(opts, "["+c.Key+"] "+c.Label)
		}
	}
	prompt := question + " " + strings.Join(opts, ", ")
	if def != "" {
		prompt += " [" + def + "]"
	}
	prompt += ": "
	for {
		s, err := p.Ask(ctx, prompt)
		if err != nil {
			return "", err
		}
		if s == "" && def != "" {
			return def, nil
		}
		if k, ok := pick(choices, s); ok {
			return k, nil
		}
		fmt.Fprintf(p.Out, "  Please type one of: %s.\n", keys(choices))
	}
}

func pick(choices []Choice, s string) (string, bool) {
	s = strings.ToLower(s)
	if s == "" {
		return "", false
	}
	for _, c := range choices {
		if s == strings.ToLower(c.Key) || strings.HasPrefix(strings.ToLower(c.Label), s) {
			return c.Key, true
		}
	}
	return "", false
}

func keys(choices []Choice) string {
	var ks []string
	for _, c := range choices {
		ks = append(ks, c.Key)
	}
	return strings.Join(ks, ", ")
}
