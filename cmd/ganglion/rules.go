package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ganglion-dev/ganglion/extensions/approval"
)

func newRulesCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "Check approval rules files and try them on tool calls",
	}
	cmd.AddCommand(newRulesCheckCmd(stdout), newRulesEvalCmd(stdout), newRulesTestCmd(stdout))
	return cmd
}

func newRulesCheckCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "check FILE",
		Short: "Compile a rules file and run its tests",
		Long: `Check compiles every rule of FILE and runs the tests the file holds. A rule
that does not compile, is not boolean, or a test that fails is reported with
the file, the line and the column.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := approval.Load(args[0])
			if err != nil {
				return failed(err)
			}
			fmt.Fprintf(stdout, "%s: %d rules, default %s: ok\n", args[0], len(r.RuleNames()), r.Default)
			return nil
		},
	}
}

func newRulesEvalCmd(stdout io.Writer) *cobra.Command {
	var (
		callJSON string
		asJSON   bool
	)
	cmd := &cobra.Command{
		Use:   "eval FILE --call JSON",
		Short: "Decide a tool call with a rules file, and explain",
		Long: `Eval decides the tool call given as JSON with the rules of FILE and prints the
decision, the rules that matched and the explanation. The call is
{"tool": "execute_command", "args": {"command": "git status"}}, with
optional "agent", "instance" and "chain" (the calling agents).`,
		Example: `  ganglion rules eval rules.yaml --call '{"tool":"execute_command","args":{"command":"git status"}}'`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if callJSON == "" {
				return usageError("--call is required: the tool call as JSON, such as '{\"tool\":\"read_file\",\"args\":{\"path\":\"a\"}}'")
			}
			var c approval.CallDoc
			dec := json.NewDecoder(strings.NewReader(callJSON))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&c); err != nil {
				return usageError("--call: %v", err)
			}
			if rest := strings.TrimLeft(callJSON[dec.InputOffset():], " \t\r\n"); rest != "" {
				return usageError("--call: more after the JSON value, at offset %d: give one tool call", len(callJSON)-len(rest))
			}
			if c.Tool == "" {
				return usageError(`--call: "tool" is required`)
			}
			r, err := approval.Load(args[0])
			if err != nil {
				return failed(err)
			}
			res := r.Decide(c.Call(""))
			if asJSON {
				b, err := indentJSON(res)
				if err != nil {
					return failed(err)
				}
				fmt.Fprintf(stdout, "%s\n", b)
				return nil
			}
			fmt.Fprintf(stdout, "decision: %s\n", res.Decision)
			for _, m := range res.Matched {
				line := fmt.Sprintf("matched:  %q (%s)", m.Rule, m.Decision)
				if m.Reason != "" {
					line += ": " + m.Reason
				}
				fmt.Fprintln(stdout, line)
			}
			fmt.Fprintf(stdout, "why:      %s\n", res.Explanation)
			return nil
		},
	}
	cmd.Flags().StringVar(&callJSON, "call", "", "the tool call, as JSON")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}
