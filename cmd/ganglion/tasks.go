package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/ganglion-dev/ganglion/internal/plainjson"
	"github.com/ganglion-dev/ganglion/runtime"
)

func newTasksCmd(stdout, stderr io.Writer) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "tasks [DIR]",
		Short: "List the open delegation tasks",
		Long: `Tasks lists the delegation tasks (call_agent) of DIR/ganglion.yaml that have
not completed: what each waits for, its parent, how many of its own
delegations have not reported yet, and what it spent against its tree's
task_budget (its own turns, and those of the tasks under it that have
reported). A task is deleted when it completes.

It only reads: the unfinished tasks run again at the next ganglion run.
--agent and --instance narrow the list (default: every agent and
instance); --json prints one task per line, with its delegation context.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := projectDir(args)
			rt, _, done, err := openAgents(cmd.Context(), f, dir, stderr, readOnly()...)
			if err != nil {
				return err
			}
			defer done()
			key := f.instance
			if !cmd.Flags().Changed("instance") {
				key = ""
			}
			tasks, err := rt.Tasks(cmd.Context(), f.agent, key)
			if err != nil {
				return failed(err)
			}
			if f.json {
				return jsonLines(stdout, tasks, func(t runtime.Task) string { return "task " + t.ID })
			}
			if len(tasks) == 0 {
				fmt.Fprintln(stderr, "no open tasks")
				return nil
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TASK\tAGENT/INSTANCE\tSTATE\tPENDING\tPARENT\tSPENT\tREQUESTER\tREQUEST")
			for _, t := range tasks {
				parent := t.ParentID
				if parent == "" {
					parent = "-"
				}
				spent := fmt.Sprintf("%d delegations, %d turns, %d tokens", t.Spent.Delegations, t.Spent.Turns, t.Spent.Tokens)
				fmt.Fprintf(tw, "%s\t%s/%s\t%s\t%d\t%s\t%s\t%s\t%s\n", t.ID, t.Agent, t.Instance, t.State, t.Pending, parent, spent, t.Requester, oneLine(t.OriginalRequest, 60))
			}
			return tw.Flush()
		},
	}
	addRuntimeFlags(cmd, &f)
	return cmd
}

// jsonLines prints items as one JSON object per line; what names an item
// in errors.
func jsonLines[T any](w io.Writer, items []T, what func(T) string) error {
	for _, it := range items {
		b, err := plainjson.Marshal(it)
		if err != nil {
			return failed(fmt.Errorf("encode %s: %w", what(it), err))
		}
		fmt.Fprintf(w, "%s\n", b)
	}
	return nil
}
