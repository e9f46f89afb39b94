package main

import (
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = ""

func newRootCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "ganglion",
		Short:         "Run AI agents with WebAssembly-pluggable middleware",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError("%v (see '%s --help')", err, c.CommandPath())
	})
	root.AddCommand(newRunCmd(stdin, stdout, stderr), newRecordCmd(stdin, stdout, stderr), newHistoryCmd(stdout, stderr), newProtocolCmd(stdin, stdout), newVersionCmd(stdout),
		newPendingCmd(stdout, stderr), newResolveCmd("answer", stdin, stdout, stderr), newResolveCmd("skip", stdin, stdout, stderr),
		newProvideCmd(stdin, stdout, stderr), newResolveCmd("reject", stdin, stdout, stderr), newExtCmd(stdout, stderr),
		newRulesCmd(stdout), newCassetteCmd(stdout), newMCPCmd(stdin, stdout, stderr), newTasksCmd(stdout, stderr), newResumeCmd(stdout, stderr), newServeCmd(stdout, stderr))
	return root
}

func newVersionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			fmt.Fprintln(stdout, "ganglion", buildVersion())
			return nil
		},
	}
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// isUsage recognises cobra's own usage errors, which it returns as plain errors.
func isUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires ", "invalid argument"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, usageError("--log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}
