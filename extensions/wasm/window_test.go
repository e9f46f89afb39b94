package wasm_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions/wasm"
	"github.com/ganglion-dev/ganglion/internal/guesttest"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
)

// guests are the Go guests of testdata, built once per test binary: the
// first Build builds them, so every call names them all (goGuests).
var guests guesttest.Set

var goGuests = []string{"testdata/gowindow", "testdata/gofiles", "testdata/gohttp", "testdata/goask"}

// rustGuests are the Rust guests of testdata, built once per test binary:
// every call names them all (rustGuestDirs).
var rustGuests guesttest.RustSet

var rustGuestDirs = []string{"testdata/rustfiles", "testdata/rusthttp", "testdata/rustnoop"}

// asGuests are the AssemblyScript guests of testdata, built once per test
// binary: every call names them all (asGuestDirs).
var asGuests guesttest.AssemblyScriptSet

var asGuestDirs = []string{"testdata/asfiles", "testdata/ashttp"}

func TestMain(m *testing.M) {
	code := m.Run()
	guests.Close()
	rustGuests.Close()
	asGuests.Close()
	os.Exit(code)
}

// summary is what the scripted model answers a summary request with:
// longer than the SDK's first buffer, so that the guest reads it twice.
var summary = "the user said one, two and three " + strings.Repeat("x", 5000)

// windowScript answers the summary request of testdata/gowindow with
// summary, and every turn with "ok"; both report usage.
var windowScript = `
agents:
  a:
    turns:
      - match: "^Summarise:"
        steps:
          - text: "` + summary + `"
            usage: {input_tokens: 100, output_tokens: 20}
      - match: "^toolcall"
        steps:
          - tool_calls: [{name: nothing, id: c1}]
          - text: "after the tool"
    fallback:
      steps:
        - text: "ok"
          usage: {input_tokens: 10, output_tokens: 1}
`

// TestGoGuestCondenses: a Go guest's step hook reads the window, has the
// agent's model summarise the free messages (complete) and condenses them
// (window_apply); the model is then sent the summary in their place, the
// history keeps them, and the summary's usage is the turn's.
func TestGoGuestCondenses(t *testing.T) {
	mods, cache := guests.Build(t, goGuests...)
	rt := start(t, fmt.Sprintf("[{wasm: %q}]", mods["gowindow"]), windowScript, runtime.WithWasmCache(cache))
	ctx := context.Background()
	for _, in := range []string{"one", "two", "three"} {
		sendOK(t, rt, "k", in)
	}
	res, err := rt.Send(ctx, "a", "k", runtime.UserMessage("condense now"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Response.Content != "ok" {
		t.Errorf("the condensed turn answered %q, want %q", res.Response.Content, "ok")
	}
	// The main call's usage and the summary's, once: the summary's answer
	// did not fit the guest's buffer, and the guest's second read got the
	// answer the host kept instead of calling the model again.
	if want := (pipeline.Usage{InputTokens: 110, OutputTokens: 21}); res.Usage != want {
		t.Errorf("the turn's usage is %+v, want %+v (the step's and the summary's)", res.Usage, want)
	}
	hist, err := rt.EffectiveHistory(ctx, "a", "k")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"msg-0 user: one",
		"msg-7 user: [Summary] " + summary,
		"msg-6 user: condense now",
		"msg-8 assistant: ok",
	}
	if got := describe(hist); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("effective history:\n%s\nwant:\n%s", short(got), short(want))
	}
	sum := hist[1]
	if sum.Source != (pipeline.Source{Type: pipeline.SourceExtension, Extension: "gowindow"}) {
		t.Errorf("the summary's source is %+v, want the extension's", sum.Source)
	}
	if m, _ := sum.Metadata[pipeline.MetaSummary].(map[string]any); m == nil || fmt.Sprint(m["messages"]) != "5" {
		t.Errorf("the summary's %s is %v, want it to count 5 messages", pipeline.MetaSummary, sum.Metadata[pipeline.MetaSummary])
	}
	full, err := rt.History(ctx, "a", "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(full) != 9 {
		t.Errorf("the full history has %d messages, want all 9:\n%s", len(full), short(describe(full)))
	}
}

// TestWindowRefusals: what the window imports refuse, and the text the
// guest gets for it.
func TestWindowRefusals(t *testing.T) {
	mods, cache := guests.Build(t, goGuests...)
	gowindow := fmt.Sprintf("[{wasm: %q}]", mods["gowindow"])
	tests := []struct {
		name, ext, input string
		want             string // the turn's error after turnPrefix
	}{
		{
			name: "condense a kept message", ext: gowindow, input: "keep",
			want: `extension "gowindow": step middleware: ganglion: window_apply condense: condense: message "msg-0" must stay in the window`,
		},
		{
			name: "reserved metadata on a message", ext: gowindow, input: "reserved emit",
			want: `extension "gowindow": step middleware: ganglion: emit: append message: metadata key "truncated" is reserved by the runtime: ` +
				`a middleware's message may not set it (it leaves the message out of what the model sees); name your own keys with a prefix, such as "myapp.truncated"`,
		},
		{
			name: "reserved metadata on a summary", ext: gowindow, input: "reserved summary",
			want: `extension "gowindow": step middleware: ganglion: window_apply condense: condense: metadata key "awaits" is reserved by the runtime: ` +
				`a summary's metadata may not set it (it marks a tool result that waits for a pending item); name your own keys with a prefix, such as "myapp.awaits"`,
		},
		{
			name: "another model", ext: gowindow, input: "othermodel",
			want: `extension "gowindow": step middleware: ganglion: complete: ` +
				`complete: model "summariser": a WebAssembly extension can only call the agent's own model (model "")`,
		},
		{
			name: "bad requests", ext: `[{wasm: testdata/hostile_window.wasm}]`, input: "badjson",
			want: `extension "hostile_window": step middleware: ` +
				`malformed=-1: window request: unexpected EOF; ` +
				`unknown_field=-1: window request: json: unknown field "bogus"; ` +
				`unknown_op=-1: window request: unknown op "shrink" (want truncate, reduce or condense); ` +
				`reduce_keep=-1: window request: reduce needs keep, a share above 0 and below 1; ` +
				`complete=-3: complete: the manifest does not declare "models": true`,
		},
		{
			name: "from a toolCall hook", ext: `[{wasm: testdata/hostile_window.wasm}]`, input: "toolcall",
			// The step hook passes on next's failure as its own.
			want: `extension "hostile_window": step middleware: extension "hostile_window": toolCall middleware: ` +
				`window=-1: window is for step hooks, not tool_call: the context window is the step's; ` +
				`window_apply=-1: window_apply is for step hooks, not tool_call: the context window is the step's; ` +
				`complete=-1: complete is for step hooks, not tool_call: the context window is the step's`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := start(t, tt.ext, windowScript, runtime.WithWasmCache(cache))
			sendOK(t, rt, "k", "hello")
			res, err := rt.Send(context.Background(), "a", "k", runtime.UserMessage(tt.input))
			if err == nil {
				t.Fatalf("Send(%q) = %q, want an error", tt.input, res.Response.Content)
			}
			got, ok := strings.CutPrefix(err.Error(), turnPrefix)
			if !ok || got != tt.want {
				t.Errorf("Send(%q) error\n got: %s\nwant: %s%s", tt.input, err, turnPrefix, tt.want)
			}
			var ge *wasm.GuestError
			if !errors.As(err, &ge) {
				t.Errorf("Send(%q) error is not a *wasm.GuestError", tt.input)
			}
			// The refusals changed nothing: the window is what it was.
			hist, err := rt.EffectiveHistory(context.Background(), "a", "k")
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range hist {
				if m.Metadata[pipeline.MetaCondensedBy] != nil || m.Metadata[pipeline.MetaTruncated] != nil {
					t.Errorf("message %s left the window: %v", m.ID, m.Metadata)
				}
			}
			sendOK(t, rt, "k", "hello")
		})
	}
}

// describe renders messages as "id role: content".
func describe(msgs []pipeline.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = fmt.Sprintf("%s %s: %s", m.ID, m.Role, m.Content)
	}
	return out
}

// short joins lines cut to 80 bytes, for an error message.
func short(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		if len(l) > 80 {
			l = l[:80] + "…"
		}
		b.WriteString("\t" + l + "\n")
	}
	return b.String()
}
