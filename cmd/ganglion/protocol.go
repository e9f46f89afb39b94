package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/ganglion-dev/ganglion/extensions/protocol"
)

func newProtocolCmd(stdin io.Reader, stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "protocol",
		Short: "Work with the agent-output protocols ([USER_QUESTION], [DEPENDENCY_REQUEST], ...)",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "parse [FILE]",
		Short: "Print the protocol blocks of a text and their errors, as JSON",
		Long: `Parse reads a model's output from FILE (standard input without FILE, or
with "-") and prints, as JSON, the protocol blocks it holds and every
problem with their line numbers: the corrections the model would be sent.
It is for prompt authors debugging what their agents write.

Exit codes: 0 when the text has no protocol errors, 1 when it has some (the
JSON is printed either way), 2 for a usage error.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, text, err := readInput(args, stdin)
			if err != nil {
				return err
			}
			blocks, errs := protocol.Parse(protocol.DefaultRegistry(), text)
			out := parseOutput{Blocks: []parsedBlock{}, Errors: []parseError{}}
			for _, b := range blocks {
				out.Blocks = append(out.Blocks, parsedBlock{Kind: b.Kind, StartLine: b.StartLine, EndLine: b.EndLine, Value: b.Value})
			}
			for _, e := range errs {
				out.Errors = append(out.Errors, parseError{Line: e.Line, Kind: e.Kind, Message: e.Msg})
			}
			b, err := indentJSON(out)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s\n", b)
			if len(errs) > 0 {
				return &codeError{code: exitError, err: fmt.Errorf("%s: %d protocol error(s)", name, len(errs))}
			}
			return nil
		},
	})
	return cmd
}

type parseOutput struct {
	Blocks []parsedBlock `json:"blocks"`
	Errors []parseError  `json:"errors"`
}

type parsedBlock struct {
	Kind      string `json:"kind"`
	StartLine int    `json:"start_line"`
	EndLine   int    `json:"end_line"`
	Value     any    `json:"value"`
}

type parseError struct {
	Line    int    `json:"line"`
	Kind    string `json:"kind,omitempty"`
	Message string `json:"message"`
}

// readInput reads the file args name, or stdin.
func readInput(args []string, stdin io.Reader) (name, text string, err error) {
	if len(args) == 0 || args[0] == "-" {
		b, err := io.ReadAll(stdin)
		return "standard input", string(b), err
	}
	b, err := os.ReadFile(args[0])
	if err != nil {
		return "", "", usageError("%v", err)
	}
	return args[0], string(b), nil
}
