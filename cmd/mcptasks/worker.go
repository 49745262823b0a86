package main

import (
	"context"

	"github.com/spf13/cobra"
)

func newWorkerCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run tools' tasks from a shared store, without serving HTTP",
		Long: `worker claims tasks from the store and runs them, the way serve does, but
answers no requests: run it beside "serve --workers 0" replicas, on a store
that every process shares. It defines the same tools as serve; every process
must run the same binary and configuration.

SIGTERM or Ctrl-C drains as serve does.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return usageHint(cmd, work(cmd.Context(), &f)) },
	}
	f.register(cmd.Flags(), "maximum number of tool handlers running at once")
	cmd.Flags().Lookup("store").Usage = "the store the servers write: sqlite:PATH (on this machine) or postgres://USER@HOST/DB (a memory: store is private to its process)"
	return cmd
}

func work(ctx context.Context, f *runFlags) error {
	if f.workers < 1 {
		return usageError("--workers must be at least 1 for a worker, got %d", f.workers)
	}
	if memoryStore(f.store) {
		return usageError("--store %s: a memory store is private to its process; a worker needs the store the servers write (sqlite:PATH or postgres://…)", f.store)
	}
	rt, err := newRuntime(ctx, f, runtimeOptions{})
	if err != nil {
		return err
	}
	if err := rt.start(ctx); err != nil {
		return err
	}
	rt.log.Info("working", "store", storeLabel(f.store), "workers", f.workers)
	<-ctx.Done()
	rt.log.Info("draining", "timeout", f.drainTimeout)
	rt.drainFor(f.drainTimeout)
	return nil
}
