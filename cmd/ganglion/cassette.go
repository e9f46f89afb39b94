package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/ganglion-dev/ganglion/runtime/cassette"
)

func newCassetteCmd(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cassette",
		Short: "Work with recorded sessions (ganglion record)",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "script FILE",
		Short: "Print a cassette's model answers as a script of the scripted model, to edit by hand",
		Long: `Script prints the model's answers of the cassette FILE as a script of the
scripted model (provider: scripted), for each agent its turns in order with
the steps the model answered: a hand-editable stand-in for the recording.
A turn that did not reach the model gets a placeholder, so that the turns
after it keep their numbers. What a script cannot hold (a second instance of
an agent, the models extensions opened) is named in comments at its top.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			c, err := cassette.Open(args[0])
			if err != nil {
				return failed(err)
			}
			_, err = stdout.Write(c.Script())
			return err
		},
	})
	return cmd
}
