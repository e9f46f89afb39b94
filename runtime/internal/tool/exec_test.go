//go:build unix

package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/tool"
)

func TestExecuteCommand(t *testing.T) {
	f := newFixture(t, tool.WithEnv([]string{"GREETING=hi there"}))
	f.run(t, "execute_command", []toolCase{
		{name: "output", args: `{"command":"echo hello"}`, want: "hello\n"},
		{name: "no output", args: `{"command":"true"}`, want: "(no output)"},
		{name: "stdout and stderr combined", args: `{"command":"echo out; echo err >&2; echo out2"}`, want: "out\nerr\nout2\n"},
		{name: "runs in the workspace", args: `{"command":"cat a.txt sub/a.txt"}`, want: "one\ntwo\nthree\ninside\n"},
		{name: "environment is only WithEnv and PATH", args: `{"command":"echo \"$GREETING\"; echo \"${HOME:-no home}\"; test -n \"$PATH\" && echo path"}`,
			want: "hi there\nno home\npath\n"},
		{name: "stdin is empty", args: `{"command":"cat"}`, want: "(no output)"},
		{name: "non-zero exit", args: `{"command":"echo oops; exit 3"}`, wantErr: "oops\n[exit code 3]"},
		{name: "non-zero exit, no output", args: `{"command":"false"}`, wantErr: "[exit code 1]"},
		{name: "output without final newline", args: `{"command":"printf partial; exit 2"}`, wantErr: "partial\n[exit code 2]"},
		{name: "killed by a signal", args: `{"command":"kill -TERM $$"}`, wantErr: "[command ended by signal: terminated]"},
		{name: "timeout", args: `{"command":"echo started; sleep 30","timeout_seconds":1}`,
			wantErr: "started\n[command timed out after 1s; its process group was killed]"},
		{name: "schema/no command", args: `{}`, wantErr: `arguments do not match the schema: (root): missing property 'command'`},
		{name: "schema/empty command", args: `{"command":""}`, wantErr: `arguments do not match the schema: /command: minLength: got 0, want 1`},
		{name: "schema/timeout zero", args: `{"command":"true","timeout_seconds":0}`, wantErr: `arguments do not match the schema: /timeout_seconds: minimum: got 0, want 1`},
		{name: "schema/timeout fractional", args: `{"command":"true","timeout_seconds":1.5}`, wantErr: `arguments do not match the schema: /timeout_seconds: got number, want integer`},
		{name: "schema/unknown property", args: `{"command":"true","cwd":"/"}`, wantErr: `arguments do not match the schema: (root): additional properties 'cwd' not allowed`},
	})
}

func TestExecuteCommandDefaultTimeout(t *testing.T) {
	f := newFixture(t, tool.WithCommandTimeout(300*time.Millisecond))
	start := time.Now()
	f.run(t, "execute_command", []toolCase{
		{name: "default applies", args: `{"command":"sleep 30"}`, wantErr: "[command timed out after 300ms; its process group was killed]"},
		{name: "a longer timeout is capped", args: `{"command":"sleep 30","timeout_seconds":20}`, wantErr: "[command timed out after 300ms; its process group was killed]"},
	})
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("timeouts took %v", d) // a coarse bound: the sleeps were not killed
	}
}

func TestExecuteCommandCancel(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	res := callTool(t, ctx, f.tools["execute_command"], `{"command":"echo started; sleep 30"}`)
	want := "started\n[command cancelled; its process group was killed]"
	if !res.IsError || res.Content != want {
		t.Errorf("got (IsError %v) %q, want %q", res.IsError, res.Content, want)
	}
}

func TestExecuteCommandOutputCap(t *testing.T) {
	f := newFixture(t, tool.WithMaxOutput(100))
	f.run(t, "execute_command", []toolCase{
		{name: "cut", args: `{"command":"head -c 100000 /dev/zero | tr '\\0' a"}`,
			want: strings.Repeat("a", 100) + "\n[output truncated: showing the first 100 of 100000 bytes]"},
		{name: "cut and failed", args: `{"command":"head -c 1000 /dev/zero | tr '\\0' b; exit 4"}`,
			wantErr: strings.Repeat("b", 100) + "\n[output truncated: showing the first 100 of 1000 bytes]\n[exit code 4]"},
		{name: "exactly the limit", args: `{"command":"head -c 100 /dev/zero | tr '\\0' c"}`, want: strings.Repeat("c", 100)},
	})
}

// TestExecuteCommandKillsGroup checks that processes a command leaves in the
// background die with it, and do not hold the call open.
func TestExecuteCommandKillsGroup(t *testing.T) {
	f := newFixture(t)
	tests := []struct{ name, command string }{
		{name: "background sleep", command: `sleep 30 & echo $!`},
		{name: "background subshell holding the output", command: `(sleep 30; echo late) & echo $!`},
		{name: "grandchild", command: `sh -c 'sleep 30 & echo $!; wait'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "grandchild" {
				// The inner shell waits, so only the timeout ends the call.
				tt.command = `{"command":"` + tt.command + `","timeout_seconds":1}`
			} else {
				tt.command = `{"command":"` + tt.command + `"}`
			}
			start := time.Now()
			res := f.call(t, "execute_command", tt.command)
			if d := time.Since(start); d > 15*time.Second {
				t.Errorf("the call took %v", d)
			}
			first, _, _ := strings.Cut(res.Content, "\n")
			pid, err := strconv.Atoi(first)
			if err != nil {
				t.Fatalf("no pid in %q", res.Content)
			}
			deadline := time.Now().Add(10 * time.Second)
			for alive(pid) {
				if time.Now().After(deadline) {
					t.Fatalf("background process %d is still running", pid)
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// alive reports whether process pid runs (a zombie does not).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) && !strings.Contains(err.Error(), "no such process")
	}
	// The state follows the parenthesised command name.
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

func TestExecuteCommandConcurrent(t *testing.T) {
	f := newFixture(t)
	done := make(chan struct{})
	for i := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			want := strconv.Itoa(i) + "\n"
			res := callTool(t, context.Background(), f.tools["execute_command"], `{"command":"echo `+strconv.Itoa(i)+`"}`)
			if res.IsError || res.Content != want {
				t.Errorf("got %q, want %q", res.Content, want)
			}
		}()
	}
	for range 8 {
		<-done
	}
}

// TestExecuteCommandNoLeak checks that no goroutine outlives a call.
func TestExecuteCommandNoLeak(t *testing.T) {
	f := newFixture(t)
	before := runtime.NumGoroutine()
	for _, args := range []string{
		`{"command":"echo hi"}`,
		`{"command":"exit 1"}`,
		`{"command":"sleep 30 &"}`,
		`{"command":"sleep 30","timeout_seconds":1}`,
	} {
		f.call(t, "execute_command", args)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines before, %d after", before, runtime.NumGoroutine())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkExecuteCommand measures execute_command calls end to end:
// starting the shell in its process group, collecting the output, killing
// the group. "echo" is the worst case for the per-call overhead.
func BenchmarkExecuteCommand(b *testing.B) {
	ws, err := tool.OpenWorkspace(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	exe := ws.Tools()[3]
	for _, bb := range []struct{ name, command, want string }{
		{name: "echo", command: "echo hi", want: "hi\n"},
		{name: "pipeline", command: "ls -l / | sort | wc -l >/dev/null; echo hi", want: "hi\n"},
	} {
		b.Run(bb.name, func(b *testing.B) {
			args, _ := json.Marshal(map[string]string{"command": bb.command})
			c := pipeline.NewToolCallContext(pipeline.ToolCallInfo{Call: pipeline.ToolCall{ID: "call-1", Name: exe.Name, Arguments: args}})
			for b.Loop() {
				res, err := exe.Func(context.Background(), c)
				if err != nil || res.IsError || res.Content != bb.want {
					b.Fatalf("got %+v, %v", res, err)
				}
			}
		})
	}
}
