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
	// cobra's completion command, made now rather than at Execute so that
	// an unknown shell is a usage error instead of the help and exit 0. Its
	// scripts go to the writer set here, which it captures when made.
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Args = cobra.NoArgs
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		}
	}
	return root
}

func newVersionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, the revision it was built from and the Go that built it",
		Long: `Version prints one line: the module version (a tag, or a pseudo-version
such as v0.0.0-20261207075521-a7993dc9e04e when built from a clone), then,
when the build recorded them, the VCS revision, its commit time and whether
the tree had uncommitted changes, and the Go version that built the binary.
A binary built with -ldflags "-X main.version=V" says V instead.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			bi, _ := debug.ReadBuildInfo()
			fmt.Fprintln(stdout, versionLine(bi))
			return nil
		},
	}
}

// buildVersion is the version this binary was built as: the -ldflags
// version, else the module version in the build info, else "devel".
func buildVersion() string {
	bi, _ := debug.ReadBuildInfo()
	return moduleVersion(bi)
}

func moduleVersion(bi *debug.BuildInfo) string {
	if version != "" {
		return version
	}
	if bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

// versionLine is what ganglion version prints: "ganglion VERSION", and, in
// parentheses, the VCS revision, its time, "modified" when the tree had
// uncommitted changes, and the Go version, each when the build info has it.
func versionLine(bi *debug.BuildInfo) string {
	line := "ganglion " + moduleVersion(bi)
	if bi == nil {
		return line
	}
	var details []string
	set := map[string]string{}
	for _, s := range bi.Settings {
		set[s.Key] = s.Value
	}
	if rev := set["vcs.revision"]; rev != "" {
		details = append(details, "revision "+rev)
	}
	if t := set["vcs.time"]; t != "" {
		details = append(details, t)
	}
	if set["vcs.modified"] == "true" {
		details = append(details, "modified")
	}
	if bi.GoVersion != "" {
		details = append(details, bi.GoVersion)
	}
	if len(details) == 0 {
		return line
	}
	return line + " (" + strings.Join(details, ", ") + ")"
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
