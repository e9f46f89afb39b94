package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ganglion-dev/ganglion/extensions/approval"
	goldenfile "github.com/ganglion-dev/ganglion/internal/golden"
	"github.com/ganglion-dev/ganglion/runtime/cassette"
)

func newRulesTestCmd(stdout io.Writer) *cobra.Command {
	var (
		workspace string
		update    bool
	)
	cmd := &cobra.Command{
		Use:   "test FILE CASSETTE...",
		Short: "Decide every tool call of recorded sessions with a rules file, against golden decisions",
		Long: `Test decides, with the rules of FILE, every tool call the model asked for in
each CASSETTE (recorded with ganglion record), and checks the decisions
against the golden file beside the cassette: NAME.RULES.golden, where RULES is
FILE's name without its extension. A missing golden file is written; --update
rewrites one that differs. So a change to a rules file shows, call by call,
which recorded calls it decides otherwise.

Paths in the calls' arguments are resolved against --workspace (default: the
current directory). The calling chain of a delegated agent is not recorded:
rules on chain see none. Exit codes: 0 all match, 1 a cassette differs, 2 usage.`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := approval.Load(args[0])
			if err != nil {
				return failed(err)
			}
			ws, err := filepath.Abs(workspace)
			if err != nil {
				return failed(err)
			}
			rulesName := strings.TrimSuffix(filepath.Base(args[0]), filepath.Ext(args[0]))
			failures := 0
			for _, path := range args[1:] {
				c, err := cassette.Open(path)
				if err != nil {
					fmt.Fprintf(stdout, "FAIL %s\n  %v\n", filepath.Base(path), err)
					failures++
					continue
				}
				gold := strings.TrimSuffix(path, filepath.Ext(path)) + "." + rulesName + ".golden"
				msg, wrote, err := goldenfile.Compare(gold, decisions(r, c, ws), update)
				switch {
				case err != nil:
					msg = err.Error()
				case msg == "" && wrote:
					fmt.Fprintf(stdout, "ok   %s (wrote %s)\n", filepath.Base(path), filepath.Base(gold))
					continue
				case msg == "":
					fmt.Fprintf(stdout, "ok   %s\n", filepath.Base(path))
					continue
				}
				fmt.Fprintf(stdout, "FAIL %s\n%s\n", filepath.Base(path), indentLines(msg+"(accept the change with --update)", "  "))
				failures++
			}
			if failures > 0 {
				return &codeError{code: exitError, err: fmt.Errorf("%d of %d cassettes failed", failures, len(args)-1)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&workspace, "workspace", ".", "the workspace the calls' paths are relative to")
	cmd.Flags().BoolVar(&update, "update", false, "rewrite the golden files that differ")
	return cmd
}

// decisions decides each recorded call, a line each: where, the call, the
// decision and why.
func decisions(r *approval.Rules, c *cassette.Cassette, workspace string) string {
	var b strings.Builder
	for _, call := range c.Calls() {
		res := r.Decide(approval.Call{Tool: call.Name, Category: call.Category, Args: call.Arguments, Agent: call.Agent,
			Instance: call.Instance, Turn: call.TurnID, Step: call.Step, Workspace: workspace})
		fmt.Fprintf(&b, "%s/%s %s step %d %s %s %s: %s (%s)\n", call.Agent, call.Instance, call.TurnID, call.Step, call.ID, call.Name,
			call.Arguments, res.Decision, res.Explanation)
	}
	if b.Len() == 0 {
		return "(no tool calls)\n"
	}
	return b.String()
}
