package tool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// pipeGrace is how long execute_command keeps reading output after the
// command's process group is gone. Only a process that left the group (a
// daemon) can still hold the pipe open by then.
const pipeGrace = time.Second

type executeCommandArgs struct {
	Command        string  `json:"command"`
	TimeoutSeconds float64 `json:"timeout_seconds"`
}

// callEnvKey carries a call's extra environment (see WithCallEnv) to executeCommand.
type callEnvKey struct{}

func (w *Workspace) executeCommandTool() pipeline.Tool {
	t := w.executeCommandSpec()
	if w.cfg.callEnv == nil {
		return t
	}
	run := t.Func
	t.Func = func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
		env, err := w.cfg.callEnv(ctx, c)
		if err != nil {
			return &pipeline.ToolResult{CallID: c.CallID(), Name: c.Name(), IsError: true, Content: "cannot prepare the command's environment: " + err.Error()}, nil
		}
		return run(context.WithValue(ctx, callEnvKey{}, env), c)
	}
	return t
}

func (w *Workspace) executeCommandSpec() pipeline.Tool {
	return newTool(w, pipeline.ToolSpec{
		Name: "execute_command",
		Description: fmt.Sprintf("Run a shell command with sh -c in the workspace directory. "+
			"Returns stdout and stderr combined (at most %d bytes) and the exit code if it is not 0. "+
			"The command and every process it started are killed when it times out (default and maximum %v) "+
			"and when it exits, so background processes do not survive the call.", w.cfg.maxOutput, w.cfg.timeout),
		Parameters: []byte(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "minLength": 1, "description": "The shell command."},
    "timeout_seconds": {"type": "integer", "minimum": 1, "description": "Seconds before the command is killed; cannot exceed the default."}
  },
  "required": ["command"],
  "additionalProperties": false
}`),
		Category: pipeline.CategoryExecute,
	}, w.executeCommand)
}

func (w *Workspace) executeCommand(ctx context.Context, a executeCommandArgs) (string, error) {
	timeout := w.cfg.timeout
	if a.TimeoutSeconds > 0 && a.TimeoutSeconds < timeout.Seconds() {
		timeout = time.Duration(a.TimeoutSeconds * float64(time.Second))
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	pr, pw, err := os.Pipe()
	if err != nil {
		return "", fmt.Errorf("cannot start the command: %v", err)
	}
	out := &cappedBuffer{max: w.cfg.maxOutput}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		_, _ = io.Copy(out, pr)
	}()
	defer func() {
		// Stop reading once the pipe is drained, or after a grace period
		// if a process outside the group still holds it.
		t := time.NewTimer(pipeGrace)
		select {
		case <-readDone:
		case <-t.C:
		}
		t.Stop()
		pr.Close()
		<-readDone
	}()

	// The command runs in a process group of its own that dies with it, on
	// timeout, on cancellation, and with the runtime (see group).
	g, err := w.startGroup()
	if err != nil {
		pw.Close()
		return "", fmt.Errorf("cannot start the command: %v", err)
	}
	defer g.end() // after the output is read: the watcher dies meanwhile
	cmd := exec.CommandContext(runCtx, "sh", "-c", a.Command)
	cmd.Dir = w.dir
	cmd.Env = w.commandEnv()
	if extra, _ := ctx.Value(callEnvKey{}).([]string); len(extra) > 0 {
		cmd.Env = append(cmd.Env, extra...) // later entries win in os/exec
	}
	cmd.Stdout, cmd.Stderr = pw, pw // an *os.File: the shell writes to it directly
	g.join(cmd)
	cmd.Cancel = g.kill
	waitErr := func() error {
		// The shell's parent-death signal follows this thread: hold it
		// until the shell is reaped (see group).
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			return err
		}
		pw.Close()
		return cmd.Wait()
	}()
	_ = g.kill() // background children must not outlive the call
	if cmd.Process == nil {
		pw.Close()
		return "", fmt.Errorf("cannot start the command: %v", waitErr)
	}

	// Wait for the output before reading it; the deferred func then returns at once.
	t := time.NewTimer(pipeGrace)
	select {
	case <-readDone:
	case <-t.C:
		pr.Close()
		<-readDone
	}
	t.Stop()

	var status string
	switch {
	case waitErr == nil:
	case ctx.Err() != nil:
		status = "command cancelled; its process group was killed"
	case runCtx.Err() != nil:
		status = fmt.Sprintf("command timed out after %v; its process group was killed", timeout)
	default:
		var ee *exec.ExitError
		if !errors.As(waitErr, &ee) {
			status = fmt.Sprintf("command failed: %v", waitErr)
		} else if code := ee.ExitCode(); code >= 0 {
			status = fmt.Sprintf("exit code %d", code)
		} else {
			status = fmt.Sprintf("command ended by %v", ee.ProcessState)
		}
	}
	text := out.text()
	if status == "" {
		if text == "" {
			return "(no output)", nil
		}
		return text, nil
	}
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return "", errors.New(text + "[" + status + "]")
}

// commandEnv is the environment of a command: the configured one, plus PATH.
func (w *Workspace) commandEnv() []string {
	env := slices.Clone(w.cfg.env)
	if !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }) {
		path := os.Getenv("PATH")
		if path == "" {
			path = "/usr/local/bin:/usr/bin:/bin"
		}
		env = append(env, "PATH="+path)
	}
	return env
}

// cappedBuffer keeps the first max bytes written to it and counts the rest.
// It never fails a write, so the command is never blocked on its output.
type cappedBuffer struct {
	buf   []byte
	max   int
	total int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.total += len(p)
	if room := b.max - len(b.buf); room > 0 {
		b.buf = append(b.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// text returns the output, saying so if it was cut.
func (b *cappedBuffer) text() string {
	if b.total <= b.max {
		return string(b.buf)
	}
	kept := cutUTF8(b.buf, b.max)
	sep := "\n"
	if len(kept) > 0 && kept[len(kept)-1] == '\n' {
		sep = ""
	}
	return fmt.Sprintf("%s%s[output truncated: showing the first %d of %d bytes]", kept, sep, len(kept), b.total)
}
