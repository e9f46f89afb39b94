package wasm_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/extensions/wasm"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

// The hostile modules of testdata (hostile_*.wat) are valid guests whose
// turn hook misbehaves only for an input starting with a trigger, and calls
// next otherwise. Each test runs the misbehaving turn between two good ones
// and beside a good one on another instance: only its own call may fail.

// hostileScript answers "ok"; it calls a tool for an input starting with
// "reenter", and fails the model call for one starting with "passon".
const hostileScript = `
agents:
  a:
    turns:
      - match: "^reenter"
        steps:
          - tool_calls: [{name: nothing, id: c1}]
          - text: "after the tool"
      - match: "^passon"
        steps:
          - error: "model unavailable"
    fallback:
      steps:
        - text: "ok"
`

// failWithin bounds how long a misbehaving call may take: its deadline
// (100ms here) plus a margin for slow machines and -race. It is loose on
// purpose: it tells a stopped call from a hung one, nothing finer.
const failWithin = 5 * time.Second

// turnPrefix starts the error of the second turn of instance "k".
const turnPrefix = `agent "a" instance "k" turn-2: `

func TestHostileModules(t *testing.T) {
	tests := []struct {
		name  string
		ext   string // the agent's extensions
		input string // the input that makes the hook misbehave
		// want is the misbehaving turn's error after turnPrefix: exactly, or
		// as a prefix when prefix is set (a trap's message ends with
		// wazero's stack trace).
		want     string
		prefix   bool
		trap     bool          // the error is a *wasm.TrapError of ganglion_turn
		guest    bool          // the error is the guest's own (*wasm.GuestError)
		deadline bool          // the error matches context.DeadlineExceeded
		within   time.Duration // bound of the failing call, if not failWithin
		// bug is what the host does instead because of a host bug (the
		// error after turnPrefix), and bugNote the bug: the case skips while
		// the host does exactly that. Then want is only a part of the error
		// a fixed host should give.
		bug, bugNote string
		// hangs skips a case that would hang the test process.
		hangs string
		// anyDeadline: the error may or may not be the deadline.
		anyDeadline bool
	}{
		{
			name:  "infinite loop",
			ext:   `[{wasm: testdata/hostile_loop.wasm, limits: {timeout: 100ms}}]`,
			input: "loop forever",
			want:  `extension "hostile_loop": turn middleware: ganglion_turn: deadline exceeded`,
			trap:  true, deadline: true,
		},
		{
			// A timeout the growth does not reach under -race, where 32
			// memory.grow take 300 ms: the case is about memory.
			name:   "memory bomb",
			ext:    `[{wasm: testdata/hostile_membomb.wasm, limits: {timeout: 2s, memory: 2MiB}}]`,
			input:  "bomb",
			want:   `extension "hostile_membomb": turn middleware: ganglion_turn: wasm error: out of bounds memory access`,
			prefix: true, trap: true,
		},
		{
			name:   "trap",
			ext:    `[{wasm: testdata/hostile_trap.wasm, limits: {timeout: 100ms}}]`,
			input:  "trap",
			want:   `extension "hostile_trap": turn middleware: ganglion_turn: wasm error: unreachable`,
			prefix: true, trap: true,
		},
		{
			// With a long timeout, the stack overflows before the deadline.
			name:  "deep recursion",
			ext:   `[{wasm: testdata/hostile_recurse.wasm, limits: {timeout: 1m}}]`,
			input: "recurse",
			want:  `extension "hostile_recurse": turn middleware: ganglion_turn: stack overflow`,
			trap:  true, within: 30 * time.Second,
		},
		{
			name:  "exponential recursion without a loop",
			ext:   `[{wasm: testdata/hostile_fanout.wasm, limits: {timeout: 100ms}}]`,
			input: "fanout",
			want:  `extension "hostile_fanout": turn middleware: ganglion_turn: deadline exceeded`,
			// Metering checks at function entries too (meter.go): without it,
			// wazero checks only at loop headers, this call ran for ever, and
			// the next garbage collection stalled the whole process.
			trap: true, deadline: true,
		},
		{
			name: "deep recursion under the deadline",
			// 25 ms, not less: the same limit bounds the bystander's good
			// turn, which a loaded machine can keep past 1 ms.
			ext:   `[{wasm: testdata/hostile_recurse.wasm, limits: {timeout: 25ms}}]`,
			input: "recurse",
			// Which comes first depends on the machine: both fail only this call.
			want:   `extension "hostile_recurse": turn middleware: ganglion_turn: `,
			prefix: true, trap: true, anyDeadline: true,
		},
		{
			name:  "host-call storm",
			ext:   `[{wasm: testdata/hostile_storm.wasm, limits: {timeout: 100ms}}]`,
			input: "storm",
			want:  `extension "hostile_storm": turn middleware: ganglion_turn: deadline exceeded`,
			trap:  true, deadline: true,
		},
		{
			// Bulk operations are charged by their size (meter.go).
			name:  "memory.copy storm",
			ext:   `[{wasm: testdata/hostile_bulk.wasm, limits: {timeout: 200ms}}]`,
			input: "copy",
			want:  `extension "hostile_bulk": turn middleware: ganglion_turn: deadline exceeded`,
			trap:  true, deadline: true,
		},
		{
			// Bulk operations are charged by their size (meter.go).
			name:  "memory.fill storm",
			ext:   `[{wasm: testdata/hostile_bulk.wasm, limits: {timeout: 200ms}}]`,
			input: "fill",
			want:  `extension "hostile_bulk": turn middleware: ganglion_turn: deadline exceeded`,
			trap:  true, deadline: true,
		},
		{
			// Bulk operations are charged by their size (meter.go).
			name:  "memory.init storm",
			ext:   `[{wasm: testdata/hostile_bulk.wasm, limits: {timeout: 200ms}}]`,
			input: "meminit",
			want:  `extension "hostile_bulk": turn middleware: ganglion_turn: deadline exceeded`,
			trap:  true, deadline: true,
		},
		{
			// Bulk operations are charged by their size (meter.go).
			name:  "table.fill storm",
			ext:   `[{wasm: testdata/hostile_bulk.wasm, limits: {timeout: 200ms}}]`,
			input: "tfill",
			want:  `extension "hostile_bulk": turn middleware: ganglion_turn: deadline exceeded`,
			trap:  true, deadline: true,
		},
		{
			// Bulk operations are charged by their size (meter.go).
			name:  "table.copy storm",
			ext:   `[{wasm: testdata/hostile_bulk.wasm, limits: {timeout: 200ms}}]`,
			input: "tcopy",
			want:  `extension "hostile_bulk": turn middleware: ganglion_turn: deadline exceeded`,
			trap:  true, deadline: true,
		},
		{
			// Bulk operations are charged by their size (meter.go).
			name:  "table.init storm",
			ext:   `[{wasm: testdata/hostile_bulk.wasm, limits: {timeout: 200ms}}]`,
			input: "tinit",
			want:  `extension "hostile_bulk": turn middleware: ganglion_turn: deadline exceeded`,
			trap:  true, deadline: true,
		},
		{
			// Host calls count against the deadline at once, and one hook
			// call may publish, emit and log only so much.
			name:  "publish flood",
			ext:   `[{wasm: testdata/hostile_flood.wasm, limits: {timeout: 200ms}}]`,
			input: "publish",
			want:  `extension "hostile_flood": turn middleware: ganglion_turn: deadline exceeded`,
			trap:  true, deadline: true,
		},
		{
			// Host calls count against the deadline at once, and one hook
			// call may publish, emit and log only so much.
			name:  "emit flood",
			ext:   `[{wasm: testdata/hostile_flood.wasm, limits: {timeout: 200ms}}]`,
			input: "emit",
			want:  `extension "hostile_flood": turn middleware: ganglion_turn: deadline exceeded`,
			trap:  true, deadline: true,
		},
		{
			// Host calls count against the deadline at once, and one hook
			// call may publish, emit and log only so much.
			name:  "log flood",
			ext:   `[{wasm: testdata/hostile_flood.wasm, limits: {timeout: 200ms}}]`,
			input: "log",
			want:  `extension "hostile_flood": turn middleware: ganglion_turn: deadline exceeded`,
			trap:  true, deadline: true,
		},
		{
			// Host calls count against the deadline at once, and one hook
			// call may publish, emit and log only so much.
			name:  "stdout flood",
			ext:   `[{wasm: testdata/hostile_flood.wasm, limits: {timeout: 200ms}}]`,
			input: "stdout",
			want:  `extension "hostile_flood": turn middleware: ganglion_turn: deadline exceeded`,
			trap:  true, deadline: true,
		},
		{
			name:  "publish over its bound",
			ext:   `[{wasm: testdata/hostile_flood.wasm, limits: {timeout: 2s}}]`,
			input: "until_publish",
			want:  `extension "hostile_flood": turn middleware: publish: over the limit of 256 events per hook call`,
			guest: true,
		},
		{
			name:  "emit over its bound",
			ext:   `[{wasm: testdata/hostile_flood.wasm, limits: {timeout: 2s}}]`,
			input: "until_emit",
			want:  `extension "hostile_flood": turn middleware: emit: over the limit of 4194304 bytes per hook call`,
			guest: true,
		},
		{
			name:  "log over its bound",
			ext:   `[{wasm: testdata/hostile_flood.wasm, limits: {timeout: 2s}}]`,
			input: "until_log",
			want:  `extension "hostile_flood": turn middleware: log: over the limit of 1024 records per hook call`,
			guest: true,
		},
		{
			name:  "huge values",
			ext:   `[{wasm: testdata/hostile_huge.wasm, limits: {timeout: 100ms, max_payload: 1KiB}}]`,
			input: "huge",
			want: `extension "hostile_huge": turn middleware: ` +
				"set_field=-6 log=-6 set_error=-6 set_field=-6 log=-6 set_field=-5 log=-5 set_error=-5",
			guest: true,
		},
		{
			name:  "out-of-bounds pointers",
			ext:   `[{wasm: testdata/hostile_bounds.wasm, limits: {timeout: 100ms}, secrets: [HOSTILE_KEY]}]`,
			input: "bounds",
			want: `extension "hostile_bounds": turn middleware: ` +
				"manifest=-5 register=-5 field=-5 field_wrap=-5 set_field=-5 set_field_wrap=-5 message=-5 " +
				"emit=-5 state_set=-5 state_get=-5 publish_topic=-5 publish_data=-5 log=-5 secret=-5 " +
				"agents_request=-5 agents_send=-5 window=-5 window_apply=-5 window_apply_buf=-5 complete=-5 complete_buf=-5 " +
				"set_error=-5 last_error=-5 field_short=-5",
			guest: true,
		},
		{
			name:  "proc_exit",
			ext:   `[{wasm: testdata/hostile_exit.wasm, limits: {timeout: 100ms}}]`,
			input: "exit",
			want:  `extension "hostile_exit": turn middleware: ganglion_turn: the guest exited with code 7`,
			trap:  true,
		},
		{
			name:  "proc_exit 0",
			ext:   `[{wasm: testdata/hostile_exit.wasm, limits: {timeout: 100ms}}]`,
			input: "exit0",
			want:  `extension "hostile_exit": turn middleware: ganglion_turn: the guest exited with code 0`,
			trap:  true,
		},
		{
			name:  "re-entry deeper than max_depth",
			ext:   `[{wasm: testdata/hostile_reenter.wasm, limits: {timeout: 100ms, max_depth: 2}}]`,
			input: "reenter",
			want: `extension "hostile_reenter": turn middleware: extension "hostile_reenter": step middleware: ` +
				`extension "hostile_reenter": toolCall middleware: the instance is re-entered deeper than max_depth 2`,
			guest: true,
		},
		{
			// The turn hook is parked in next: its result is next's to set.
			name:  "set the result of a parked hook",
			ext:   `[{wasm: testdata/hostile_reenter.wasm, limits: {timeout: 1s, max_depth: 3}}]`,
			input: "reenter_outer",
			want: `extension "hostile_reenter": turn middleware: extension "hostile_reenter": step middleware: ` +
				`extension "hostile_reenter": toolCall middleware: outer set_field: PHASE`,
			guest: true,
		},
		{
			// A message appended through a parked hook would land inside
			// the step that runs, between a tool call and its result.
			name:  "emit through a parked hook",
			ext:   `[{wasm: testdata/hostile_reenter.wasm, limits: {timeout: 1s, max_depth: 3}}]`,
			input: "reenter_emit",
			want: `extension "hostile_reenter": turn middleware: extension "hostile_reenter": step middleware: ` +
				`extension "hostile_reenter": toolCall middleware: outer emit: PHASE`,
			guest: true,
		},
		{
			name:  "trap in a re-entered hook",
			ext:   `[{wasm: testdata/hostile_reenter.wasm, limits: {timeout: 100ms, max_depth: 2}}]`,
			input: "steptrap",
			// The outer hook fails with the nested failure; the chain blames
			// the step hook, which raised it.
			want:   `ganglion_turn: extension "hostile_reenter": step middleware: ganglion_step: wasm error: unreachable`,
			prefix: true, trap: true,
		},
		{
			name:  "loop in a re-entered hook",
			ext:   `[{wasm: testdata/hostile_reenter.wasm, limits: {timeout: 100ms, max_depth: 2}}]`,
			input: "steploop",
			want:  `ganglion_turn: extension "hostile_reenter": step middleware: ganglion_step: deadline exceeded`,
			trap:  true, deadline: true,
		},
		{
			name:  "next twice",
			ext:   `[{wasm: testdata/hostile_phase.wasm, limits: {timeout: 100ms}}]`,
			input: "twice",
			// As a native middleware returning the second Next's error.
			want: `extension "hostile_phase": turn middleware: next called more than once`,
		},
		{
			name:  "stale handle",
			ext:   `[{wasm: testdata/hostile_phase.wasm, limits: {timeout: 100ms}}]`,
			input: "stale",
			want:  `extension "hostile_phase": turn middleware: field=-7 set_field=-7 messages_len=-7 next=-7`,
			guest: true,
		},
		{
			name:  "register outside init",
			ext:   `[{wasm: testdata/hostile_phase.wasm, limits: {timeout: 100ms}}]`,
			input: "register",
			want:  `extension "hostile_phase": turn middleware: init_next=-8 init_field=-8 register=-8 manifest=-8`,
			guest: true,
		},
		{
			// sdk/ABI.md: returning 1 makes next's failure the hook's own.
			name:  "return 1 after next failed",
			ext:   `[{wasm: testdata/hostile_phase.wasm, limits: {timeout: 100ms}}]`,
			input: "passon",
			want:  `extension "hostile_phase": turn middleware: the guest gave no reason (it should call set_error)`,
			guest: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.hangs != "" {
				t.Skip(tt.hangs)
			}
			rt := start(t, tt.ext, hostileScript)
			ctx := context.Background()
			sendOK(t, rt, "k", "hello")

			// A good turn on another instance runs beside the bad one.
			var wg sync.WaitGroup
			wg.Go(func() { sendOK(t, rt, "bystander", "hello") })
			begin := time.Now()
			res, err := rt.Send(ctx, "a", "k", runtime.UserMessage(tt.input))
			took := time.Since(begin)
			wg.Wait()

			within := failWithin
			if tt.within > 0 {
				within = tt.within
			}
			if took > within {
				t.Errorf("Send(%q) took %v, want less than %v", tt.input, took, within)
			}
			if err == nil {
				t.Fatalf("Send(%q) = %s %q, want an error", tt.input, res.FinishReason, res.Response.Content)
			}

			// Only that call failed: the instance's next turn, and another
			// instance's, work.
			sendOK(t, rt, "k", "hello")
			sendOK(t, rt, "k2", "hello")

			if res == nil || res.FinishReason != pipeline.FinishError {
				t.Errorf("Send(%q) result %+v, want finish reason %s", tt.input, res, pipeline.FinishError)
			}
			got, ok := strings.CutPrefix(err.Error(), turnPrefix)
			if !ok {
				t.Fatalf("Send(%q) error %q does not start with %q", tt.input, err, turnPrefix)
			}
			if tt.bug != "" && got == tt.bug {
				t.Skip("host bug: " + tt.bugNote)
			}
			match := got == tt.want || tt.prefix && strings.HasPrefix(got, tt.want) || tt.bug != "" && strings.Contains(got, tt.want)
			if !match {
				t.Errorf("Send(%q) error\n got: %s\nwant: %s", tt.input, got, tt.want)
			}
			var te *wasm.TrapError
			if isTrap := errors.As(err, &te); isTrap != tt.trap {
				t.Errorf("Send(%q) error is a *wasm.TrapError: %v, want %v", tt.input, isTrap, tt.trap)
			} else if isTrap && te.Export != "ganglion_turn" {
				t.Errorf("Send(%q) trapped in %s, want ganglion_turn", tt.input, te.Export)
			}
			var ge *wasm.GuestError
			if isGuest := errors.As(err, &ge); isGuest != tt.guest {
				t.Errorf("Send(%q) error is a *wasm.GuestError: %v, want %v", tt.input, isGuest, tt.guest)
			}
			if isDeadline := errors.Is(err, context.DeadlineExceeded); isDeadline != tt.deadline && !tt.anyDeadline {
				t.Errorf("errors.Is(Send(%q) error, context.DeadlineExceeded) = %v, want %v", tt.input, isDeadline, tt.deadline)
			}
		})
	}
}

// sendOK sends input to instance key and expects the script's "ok".
func sendOK(t *testing.T, rt *runtime.Runtime, key, input string) {
	t.Helper()
	res, err := rt.Send(context.Background(), "a", key, runtime.UserMessage(input))
	if err != nil {
		t.Errorf("Send(%q) to %s: %v", input, key, err)
		return
	}
	if res.FinishReason != pipeline.FinishText || res.Response.Content != "ok" {
		t.Errorf("Send(%q) to %s = %s %q, want %s %q", input, key, res.FinishReason, res.Response.Content, pipeline.FinishText, "ok")
	}
}

// TestConcurrentTurns runs 50 turns at once, on 50 instances, through a WASM
// extension (under -race in CI), some of them misbehaving; then checks that
// Close leaves no goroutine behind.
//
// Fewer turns misbehave than the crash back-off's threshold (backoffAfter):
// the turns finish in any order, and a bad turn crashes at once while a good
// one returns only at the end of its turn, so five crashes could come in a
// row and rightly make the extension refuse the good turns for a while.
// TestCrashBackoffAndQuarantine tests that; this test is about isolation.
func TestConcurrentTurns(t *testing.T) {
	const n = 50
	bad := func(i int) bool { return i%13 == 0 } // turns 0, 13, 26 and 39
	if c := (n + 12) / 13; c >= wasm.BackoffAfter {
		t.Fatalf("%d bad turns would trip the crash back-off (%d)", c, wasm.BackoffAfter)
	}
	const pongScript = `
agents:
  a:
    fallback:
      steps:
        - text: "calling"
          tool_calls: [{name: pong, id: c1}]
        - text: "tool said {{ .LastMessage }}"
`
	tests := []struct {
		name, ext, script string
		// bad reports whether turn i misbehaves, with the input it sends.
		bad       func(i int) (string, bool)
		good      string // the answer to a good turn
		wantError string // a substring of a bad turn's error
	}{
		{
			// guard's tool hook re-enters the instance its turn hook is
			// parked in.
			name: "guard", ext: `[{wasm: testdata/guard.wasm}]`, script: pongScript,
			bad:  func(int) (string, bool) { return "hello", false },
			good: "tool said pong",
		},
		{
			name: "traps", ext: `[{wasm: testdata/hostile_trap.wasm}]`, script: hostileScript,
			bad:  func(i int) (string, bool) { return "trap", bad(i) },
			good: "ok", wantError: "wasm error: unreachable",
		},
		{
			// 50 turns at once on a small machine under -race: a deadline
			// the good turns cannot miss.
			name: "deadlines", ext: `[{wasm: testdata/hostile_loop.wasm, limits: {timeout: 500ms}}]`, script: hostileScript,
			bad:  func(i int) (string, bool) { return "loop", bad(i) },
			good: "ok", wantError: "ganglion_turn: deadline exceeded",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := goruntime.NumGoroutine()
			rt, err := newRuntime(t, tt.ext, tt.script)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					input, bad := tt.bad(i)
					if !bad {
						input = "hello"
					}
					key := fmt.Sprintf("k%d", i)
					res, err := rt.Send(context.Background(), "a", key, runtime.UserMessage(input))
					switch {
					case bad && err == nil:
						t.Errorf("Send(%q) to %s = %q, want an error", input, key, res.Response.Content)
					case bad && !strings.Contains(err.Error(), tt.wantError):
						t.Errorf("Send(%q) to %s: %v, want an error with %q", input, key, err, tt.wantError)
					case !bad && err != nil:
						t.Errorf("Send(%q) to %s: %v", input, key, err)
					case !bad && res.Response.Content != tt.good:
						t.Errorf("Send(%q) to %s = %q, want %q", input, key, res.Response.Content, tt.good)
					}
				})
			}
			wg.Wait()
			if err := rt.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			checkGoroutines(t, before)
		})
	}
}

// checkGoroutines waits a little for the goroutines to fall back to n, and
// fails with their stacks if they do not.
func checkGoroutines(t *testing.T, n int) {
	t.Helper()
	var got int
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if got = goruntime.NumGoroutine(); got <= n {
			return
		}
		if time.Now().After(end) {
			break
		}
	}
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
	t.Errorf("%d goroutines, %d before: a goroutine leaked\n%s", got, n, b.String())
}

// newRuntime is start without t.Fatal and Cleanup: it returns New's error,
// and the caller closes the runtime.
func newRuntime(t *testing.T, extensions, script string) (*runtime.Runtime, error) {
	t.Helper()
	dir := t.TempDir()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := "model: {provider: scripted, script: script.yaml}\nagents:\n  - name: a\n    extensions: " +
		strings.ReplaceAll(extensions, "testdata/", filepath.Join(wd, "testdata")+"/") + "\n"
	c, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return runtime.New(context.Background(), runtime.WithConfig(c), runtime.WithMemoryStore())
}

// TestLoadRefusals checks that runtime.New refuses a module that is not a
// valid guest, or asks for what the config does not grant, with a clear
// error; and that a refused load leaves no goroutine behind.
func TestLoadRefusals(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	before := goruntime.NumGoroutine()
	tests := []struct {
		module string // testdata/<module>.wasm
		// want is New's error after "wasm testdata/<module>.wasm: ".
		want     string
		deadline bool // the error matches context.DeadlineExceeded
		// bug is what New does instead because of a host bug ("loaded", or
		// the error after the path), and bugNote the bug: the case skips
		// while the host does exactly that. Then want is only a part of the
		// error a fixed host should give.
		bug, bugNote string
	}{
		{module: "refuse_noversion", want: "does not export ganglion_abi_version: is it a Ganglion extension? (see sdk/ABI.md)"},
		{module: "refuse_noinit", want: "does not export ganglion_init: is it a Ganglion extension? (see sdk/ABI.md)"},
		{module: "refuse_nomemory", want: `does not export its memory as "memory"`},
		{module: "refuse_abi3", want: "guest ABI version 3, host ABI versions 1 and 2: rebuild the extension with a matching SDK"},
		{module: "refuse_import", want: `imports what the host does not provide: env.clock, ganglion.spawn ` +
			`(the host provides module "ganglion", see sdk/ABI.md, and wasi_snapshot_preview1)`},
		{module: "refuse_manifest_abi3_checked", want: "ganglion_init failed: manifest: abi 3, host ABI versions 1 and 2"},
		// The guest ignores manifest's result, as guard.wat does: the
		// refusal still names the versions.
		{module: "refuse_manifest_abi3", want: "ganglion_init declared no valid manifest: manifest: abi 3, host ABI versions 1 and 2"},
		{module: "refuse_manifest_mismatch", want: "ganglion_init declared no valid manifest: manifest: abi 2, but ganglion_abi_version returned 1: a manifest may not be newer than the module"},
		{module: "refuse_pending_abi1", want: "ganglion_init declared no valid manifest: manifest: pending needs abi 2 (the manifest says abi 1)"},
		{module: "refuse_secret", want: "its manifest asks for secrets the config does not grant: API_KEY (add them under the extension's secrets:)"},
		{module: "refuse_http_abi1", want: "ganglion_init declared no valid manifest: manifest: http needs abi 2"},
		// A module that asks for HTTP loads only where the config grants
		// every origin it asks for (here: none).
		{module: "hostile_http", want: "its manifest asks for HTTP to origins the config does not grant: http://granted.example (add them under the extension's http:)"},
		{module: "refuse_undeclared", want: `ganglion_init failed: register step: the manifest does not list the hook "step"`},
		{module: "refuse_initfail", want: "ganglion_init failed: no database configured"},
		{module: "refuse_initloop", want: "ganglion_init: deadline exceeded", deadline: true},
		// Invalid as written, valid once metered if the host did not
		// validate first: global 0 would be the fuel counter (issue 21).
		{module: "refuse_fuel", want: `invalid module: invalid function[1] export["ganglion_init"]: invalid global index`},
		// Imports called from a start function answer PHASE; log crashed
		// the host there (issue 21).
		{module: "refuse_startlog", want: "ganglion_init failed: start: every import answered PHASE"},
		{module: "refuse_bigmemory", want: "compile: section memory: min 64 pages (4 Mi) over limit of 32 pages (2 Mi)"},
		// A table's elements are host memory the memory limit does not
		// cover: one without a maximum must not grow. This one grew by a
		// gigabyte in every instance.
		{module: "refuse_tablegrow", want: "code section: function 1: offset 17: table.grow on table 0, which declares no maximum " +
			"(the host allows tables of 1048576 elements in all, counted at their maximum)"},
		{module: "refuse_nomanifest", want: "ganglion_init declared no manifest (call manifest first; see sdk/ABI.md)"},
		{module: "refuse_noexport", want: "registers a turn but does not export ganglion_turn"},
		{
			module: "refuse_signature",
			want:   "exports ganglion_turn with the signature (i32, i32) -> (i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32), want (i32, i32) -> (i32) (see sdk/ABI.md)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.module, func(t *testing.T) {
			ext := "[{wasm: testdata/" + tt.module + ".wasm, secrets: [], limits: {timeout: 100ms, memory: 2MiB}}]"
			begin := time.Now()
			rt, err := newRuntime(t, ext, hostileScript)
			if took := time.Since(begin); took > failWithin {
				t.Errorf("New took %v, want less than %v", took, failWithin)
			}
			prefix := fmt.Sprintf(`agent "a": extension %q: wasm testdata/%s.wasm: `, tt.module, tt.module)
			got := "loaded"
			if err != nil {
				got = strings.ReplaceAll(err.Error(), filepath.Join(wd, "testdata")+"/", "testdata/")
				got = strings.TrimPrefix(got, prefix)
			} else if cerr := rt.Close(); cerr != nil {
				t.Errorf("Close: %v", cerr)
			}
			if tt.bug != "" && got == tt.bug {
				t.Skip("host bug: " + tt.bugNote)
			}
			if got != tt.want && (tt.bug == "" || !strings.Contains(got, tt.want)) {
				t.Errorf("New error\n got: %s\nwant: %s%s", got, prefix, tt.want)
			}
			if err != nil && errors.Is(err, context.DeadlineExceeded) != tt.deadline {
				t.Errorf("errors.Is(New error, context.DeadlineExceeded) = %v, want %v", !tt.deadline, tt.deadline)
			}
		})
	}
	checkGoroutines(t, before)
}
