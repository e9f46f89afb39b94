package wasm_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/extensions/wasm"
	"github.com/ganglion-dev/ganglion/pipeline"
)

// turn runs one turn with input through the layers of x.
func turn(t testing.TB, x *wasm.Extension, input string) error {
	t.Helper()
	info := pipeline.TurnInfo{Agent: "a", InstanceKey: "k", TurnID: "turn-1",
		Input: pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: input}, Conversation: &conv{}}
	_, err := chain(t, x).RunTurn(context.Background(), pipeline.NewTurnContext(info))
	return err
}

// TestBackstop defeats metering (the module is loaded as written), in a
// child process, and checks that the backstop ends the process whose
// guest loops for ever, with an error that says why; with metering on,
// metering stops the guest and the backstop never fires.
func TestBackstop(t *testing.T) {
	t.Run("metering defeated", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestBackstopChild$", "-test.v")
		cmd.Env = append(os.Environ(), "GANGLION_BACKSTOP_CHILD=1")
		out, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			t.Fatalf("the child still runs after 30 s: the backstop did not fire\n%s", out)
		}
		// The backstop panics; if the process stalled (the collector
		// waits for the goroutine stuck in native code, and so does the
		// clock goroutine), the kernel kills it a second later.
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("the child ended with %v, want it ended by the backstop\n%s", err, out)
		}
		const want = `panic: wasm: extension "x": guest code ran 5s past its deadline (timeout 100ms) and metering did not stop it: ` +
			`ending the process, since nothing else can stop it (a host bug: please report it)`
		ws, _ := ee.Sys().(syscall.WaitStatus)
		switch {
		case ee.ExitCode() == 2 && strings.Contains(string(out), want):
		case ws.Signaled() && ws.Signal() == syscall.SIGKILL:
			t.Logf("the process stalled; the kill timer ended it")
		default:
			t.Errorf("the child ended with %v, want a panic with\n%s\nor SIGKILL\n---\n%s", err, want, out)
		}
		if strings.Contains(string(out), "the looping turn returned") {
			t.Errorf("the looping turn returned:\n%s", out)
		}
	})
	t.Run("metered", func(t *testing.T) {
		x := loadHostileLoop(t, newEngine(t, ""))
		fired := make(chan string, 1)
		wasm.OnRunaway(x, func(msg string) { fired <- msg })
		err := turn(t, x, "loop")
		const want = `extension "x": turn middleware: ganglion_turn: deadline exceeded`
		if err == nil || err.Error() != want || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("turn error\n got: %v\nwant: %s (matching context.DeadlineExceeded)", err, want)
		}
		time.Sleep(200 * time.Millisecond) // two ticks of the clock
		select {
		case msg := <-fired:
			t.Errorf("the backstop fired: %s", msg)
		default:
		}
	})
}

func loadHostileLoop(t testing.TB, e *wasm.Engine) *wasm.Extension {
	t.Helper()
	x, err := e.Load(context.Background(), "x", filepath.Join("testdata", "hostile_loop.wasm"), wasm.Limits{Timeout: 100 * time.Millisecond}, wasm.Grants{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

// TestBackstopChild is TestBackstop's child: it runs a looping turn of a
// module loaded without metering, which only the backstop ends.
func TestBackstopChild(t *testing.T) {
	if os.Getenv("GANGLION_BACKSTOP_CHILD") == "" {
		t.Skip("run by TestBackstop")
	}
	e := newEngine(t, "")
	wasm.SkipMetering(e)
	x := loadHostileLoop(t, e)
	if err := turn(t, x, "hello"); err != nil {
		t.Fatalf("a good turn: %v", err)
	}
	err := turn(t, x, "loop")
	t.Fatalf("the looping turn returned: %v", err)
}
