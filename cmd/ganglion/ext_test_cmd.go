package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	goldenfile "github.com/ganglion-dev/ganglion/internal/golden"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/cassette"
	"github.com/ganglion-dev/ganglion/runtime/cassette/cassettetest"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

func newExtTestCmd(stdout, stderr io.Writer) *cobra.Command {
	var (
		cassettes, run, logLevel string
		update, lenient          bool
	)
	cmd := &cobra.Command{
		Use:   "test [DIR]",
		Short: "Replay recorded sessions against DIR's extensions and check them against golden transcripts",
		Long: `Test replays every cassette in DIR/cassettes (made with ganglion record) with
the config DIR/ganglion.yaml, offline: the model's answers and the results of
the tools that act on the world (files, commands) come from the cassette,
while the extensions (WebAssembly or built in), their tools and the approval
rules run for real. Build a WebAssembly extension first (ganglion ext build).

For each cassette it checks two things:
  - the requests the model is sent are the recorded ones: at the first that
    differs, it says which call, which message and which field (with
    --lenient it goes on with the recorded answers and lists every one);
  - the transcript (events, outcomes, histories, extension state, tasks and
    pending items) is the golden file beside the cassette, NAME.golden; it
    prints a diff when it is not. A missing golden file is written.

--update rewrites the golden files that differ: accept a change in behaviour
with it. Exit codes: 0 all pass, 1 a cassette failed, 2 usage.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := projectDir(args)
			cfgPath := filepath.Join(dir, "ganglion.yaml")
			if _, err := os.Stat(cfgPath); err != nil {
				return usageError("no ganglion.yaml in %s", dir)
			}
			if cassettes == "" {
				cassettes = filepath.Join(dir, "cassettes")
			}
			files, err := filepath.Glob(filepath.Join(cassettes, "*.cassette"))
			if err != nil {
				return failed(err)
			}
			var only *regexp.Regexp
			if run != "" {
				if only, err = regexp.Compile(run); err != nil {
					return usageError("--run: %v", err)
				}
				files = slices.DeleteFunc(files, func(f string) bool { return !only.MatchString(filepath.Base(f)) })
			}
			if len(files) == 0 {
				return usageError("no cassettes (*.cassette) in %s: record one with\n  ganglion record %s %s \"MESSAGE\"",
					cassettes, filepath.Join(cassettes, "NAME.cassette"), dir)
			}
			logger, err := newLogger(stderr, logLevel)
			if err != nil {
				return err
			}
			cfg, err := config.Load(cfgPath)
			if err != nil {
				return failed(err)
			}
			data := cfg.Data
			if data == "" {
				data = filepath.Join(dir, ".ganglion", "data")
			}
			opts := cassettetest.Options{Config: cfg, Lenient: lenient,
				Runtime: []runtime.Option{runtime.WithLogger(logger), runtime.WithWasmCache(filepath.Join(data, "wasm-cache"))}}
			failures := 0
			for _, f := range files {
				if !testCassette(cmd, stdout, f, opts, update) {
					failures++
				}
			}
			if failures > 0 {
				return &codeError{code: exitError, err: fmt.Errorf("%d of %d cassettes failed", failures, len(files))}
			}
			fmt.Fprintf(stdout, "ok: %d cassettes\n", len(files))
			return nil
		},
	}
	cmd.Flags().StringVar(&cassettes, "cassettes", "", "the directory of the cassettes (default: DIR/cassettes)")
	cmd.Flags().StringVar(&run, "run", "", "test only the cassettes whose file name matches this regular expression")
	cmd.Flags().BoolVar(&update, "update", false, "rewrite the golden files that differ")
	cmd.Flags().BoolVar(&lenient, "lenient", false, "go on after a divergence with the recorded answers, and list every one")
	cmd.Flags().StringVar(&logLevel, "log-level", "warn", "log level on stderr: debug, info, warn or error")
	return cmd
}

// testCassette replays the cassette at path and reports how it went; it
// returns whether it passed.
func testCassette(cmd *cobra.Command, stdout io.Writer, path string, opts cassettetest.Options, update bool) bool {
	name := filepath.Base(path)
	c, err := cassette.Open(path)
	if err != nil {
		fmt.Fprintf(stdout, "FAIL %s\n  %v\n", name, err)
		return false
	}
	res, err := cassettetest.Replay(cmd.Context(), c, opts)
	if err != nil {
		fmt.Fprintf(stdout, "FAIL %s\n  %v\n", name, err)
		return false
	}
	var problems []string
	for _, d := range res.Divergences {
		problems = append(problems, d.Error())
	}
	gold := strings.TrimSuffix(path, filepath.Ext(path)) + ".golden"
	var (
		msg   string
		wrote bool
	)
	if _, serr := os.Stat(gold); serr != nil && len(problems) > 0 {
		// A transcript that diverged from its recording is no golden file.
		problems = append(problems, "not written: "+filepath.Base(gold)+" (the replay diverged)")
	} else {
		msg, wrote, err = goldenfile.Compare(gold, res.Transcript, update && len(problems) == 0)
		switch {
		case err != nil:
			problems = append(problems, err.Error())
		case msg != "" && len(problems) > 0:
			problems = append(problems, msg)
		case msg != "":
			problems = append(problems, msg+"(accept the change with --update)")
		}
	}
	if len(problems) > 0 {
		fmt.Fprintf(stdout, "FAIL %s\n", name)
		for _, p := range problems {
			fmt.Fprintln(stdout, indentLines(p, "  "))
		}
		return false
	}
	note := ""
	if wrote {
		note = " (wrote " + filepath.Base(gold) + ")"
	}
	fmt.Fprintf(stdout, "ok   %s%s\n", name, note)
	return true
}

// indentLines puts prefix before every line of s.
func indentLines(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}
