package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ganglion-dev/ganglion/internal/plainjson"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

func newHistoryCmd(stdout, stderr io.Writer) *cobra.Command {
	var f runFlags
	var effective bool
	cmd := &cobra.Command{
		Use:   "history [DIR]",
		Short: "Print the stored conversation of an instance",
		Long: `History prints the messages stored for one instance of an agent of
DIR/ganglion.yaml (DIR defaults to the current directory), oldest first: one
line per message, or one JSON object per line with --json.

By default it prints the full history, every message ever stored, also
those the condense extension summarised or left out. --effective prints
the history the model sees instead: summaries in place of what they
condense, without truncated messages.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := projectDir(args)
			rt, local, done, err := openAgents(cmd.Context(), f, dir, stderr, readOnly()...)
			if err != nil {
				return err
			}
			defer done()
			agent := f.agent
			if agent == "" {
				if agent, err = firstAgent(cmd.Context(), rt, local); err != nil {
					return failed(err)
				}
			}
			history := rt.History
			if effective {
				history = rt.EffectiveHistory
			}
			msgs, err := history(cmd.Context(), agent, f.instance)
			if err != nil {
				return err
			}
			if len(msgs) == 0 && !f.json {
				fmt.Fprintf(stderr, "no messages stored for agent %q instance %q\n", agent, f.instance)
			}
			answered := map[string]bool{}
			for _, m := range msgs {
				if m.Role == pipeline.RoleTool {
					answered[m.ToolCallID] = true
				}
			}
			for _, m := range msgs {
				if f.json {
					b, err := plainjson.Marshal(m)
					if err != nil {
						return fmt.Errorf("encode message %s: %w", m.ID, err)
					}
					fmt.Fprintf(stdout, "%s\n", b)
					continue
				}
				printMessage(stdout, m, answered)
			}
			return nil
		},
	}
	addRuntimeFlags(cmd, &f)
	cmd.Flags().BoolVar(&effective, "effective", false, "print the history the model sees, not the full one")
	return cmd
}

// printMessage renders a message for people: its role, its text, the tool
// calls it asks for, each on a line of its own. A call whose ID answered
// lacks has no result stored: the process stopped while it ran, and the
// instance's next load (ganglion resume, or its next turn) answers it.
func printMessage(w io.Writer, m pipeline.Message, answered map[string]bool) {
	who := string(m.Role)
	switch {
	case m.Role == pipeline.RoleTool && m.IsError:
		who = "tool " + m.Name + " (error)"
	case m.Role == pipeline.RoleTool:
		who = "tool " + m.Name
	case m.Source.Type == pipeline.SourceExtension:
		who += " (from " + m.Source.Extension + ")"
	}
	// What the model no longer sees, in the full history.
	if b, _ := m.Metadata[pipeline.MetaTruncated].(bool); b {
		who += " [left out]"
	}
	if s, _ := m.Metadata[pipeline.MetaCondensedBy].(string); s != "" {
		who += " [summarised in " + s + "]"
	}
	if b, _ := m.Metadata[runtime.MetaInterrupted].(bool); b {
		who += " [interrupted]"
	}
	text := strings.TrimRight(m.Content, "\n")
	if m.Role == pipeline.RoleTool {
		text = oneLine(text, 200)
	}
	fmt.Fprintf(w, "%s: %s\n", who, strings.ReplaceAll(text, "\n", "\n  "))
	for _, c := range m.ToolCalls {
		fmt.Fprintf(w, "  -> %s %s\n", c.Name, oneLine(string(c.Arguments), 200))
		if !answered[c.ID] {
			fmt.Fprintf(w, "     [no result: the process stopped while it ran; ganglion resume answers it]\n")
		}
	}
}
