package main

import (
	"context"

	"github.com/spf13/cobra"
)

type waitFlags struct {
	clientFlags
	json    bool
	answers string
}

func newWaitCmd() *cobra.Command {
	var f waitFlags
	cmd := &cobra.Command{
		Use:   "wait ID",
		Short: "Follow a task to its end, with live status and prompts, and print its result",
		Long: `wait follows a task that "mcptasks call" started (or any task, with --url)
until it ends, exactly as call does: a status line and prompts on a terminal,
JSON lines otherwise (see "mcptasks call --help"). Questions answered before,
here or with "mcptasks answer", are not asked again.

` + idHelp + `

` + exitCodesHelp(),
		Example: `  mcptasks wait AaJDdmLSHe
  mcptasks wait --url http://127.0.0.1:8080/mcp AaJDdmLSHeul_aCan1Fo20YwTAjoBENt`,
		Args: cobra.ExactArgs(1),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			return runWait(cmd.Context(), &f, args[0], osStreams())
		}),
	}
	fl := cmd.Flags()
	f.register(fl, true)
	fl.BoolVar(&f.json, "json", false, "print JSON lines even when stdout is a terminal")
	fl.StringVar(&f.answers, "answers", "", answersHelp)
	return withUsageHint(cmd)
}

func runWait(ctx context.Context, f *waitFlags, id string, s *streams) error {
	answers, err := parseAnswers(f.answers) // checked before the task is looked up
	if err != nil {
		return err
	}
	t, entry, err := f.openTask(ctx, id)
	if err != nil {
		return err
	}
	human := s.outTTY && !f.json
	con := newConsole(ctx, s, human)
	defer con.close()
	out := newOutput(s, human)
	defer out.close()
	fw := &follower{t: t, out: out, con: con, answers: answers,
		waitHint:    f.hint("wait", t.ID, t.ServerURL, entry != nil),
		answerExtra: f.flagsHint(t.ServerURL, entry != nil),
	}
	return fw.run(t.Wait)
}
