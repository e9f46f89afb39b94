package delegation

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// errNotLoaded is the fixture's Runnable refusal of agent "broken".
var errNotLoaded = errors.New(`agent "broken" is unavailable: extension "guard": no such module`)

// TestAgentCallRefusals: ctx.agents refuses, before any turn runs, a call
// to an agent that cannot run, with an invalid instance key or reserved
// metadata, back into its own chain (ErrCycle), or deeper than the bound
// (ErrDepth); Request and Send alike.
func TestAgentCallRefusals(t *testing.T) {
	f := newFixture(t, nil, func(e *Env) { e.Depth = 3 })
	f.runnable["broken"] = errNotLoaded
	tests := []struct {
		name   string
		chain  []any // the turn's input metadata "chain", as after JSON
		target string
		o      pipeline.AgentCallOptions
		is     error
		want   string
	}{
		{"agent that cannot run", nil, "broken", pipeline.AgentCallOptions{}, errNotLoaded,
			`call agent "broken": agent "broken" is unavailable: extension "guard": no such module`},
		{"invalid instance key", nil, "worker", pipeline.AgentCallOptions{InstanceKey: "a/b"}, nil,
			`call agent "worker": store: invalid instance key "a/b": character "/" at offset 1 not allowed (want 1 to 256 bytes of printable UTF-8 without / \ * >, no space at either end, not "." or "..")`},
		{"reserved metadata", nil, "worker", pipeline.AgentCallOptions{Metadata: map[string]any{"taskId": "t-1"}}, nil,
			`call agent "worker": metadata key "taskId" is reserved by the runtime: the call's metadata may not set it (it names the delegation task a turn works on); name your own keys with a prefix, such as "myapp.taskId"`},
		{"call to itself", nil, "lead", pipeline.AgentCallOptions{}, ErrCycle,
			`call agent "lead": agent call cycle: lead/k → lead/k`},
		{"call back into its chain", []any{"boss/k", "worker/k"}, "boss", pipeline.AgentCallOptions{}, ErrCycle,
			`call agent "boss": agent call cycle: boss/k → worker/k → lead/k → boss/k`},
		{"another instance of an agent in the chain: no cycle, but deep", []any{"boss/k", "x/k", "y/k"}, "boss", pipeline.AgentCallOptions{InstanceKey: "k2"}, ErrDepth,
			`call agent "boss": agent call chain too deep: boss/k → x/k → y/k → lead/k → boss/k2 is deeper than 3`},
		{"too deep", []any{"a/k", "b/k", "c/k"}, "worker", pipeline.AgentCallOptions{}, ErrDepth,
			`call agent "worker": agent call chain too deep: a/k → b/k → c/k → lead/k → worker/k is deeper than 3`},
	}
	for _, tt := range tests {
		for _, send := range []bool{false, true} {
			name := tt.name + "/request"
			if send {
				name = tt.name + "/send"
			}
			t.Run(name, func(t *testing.T) {
				ts := f.turn("lead", "k", "turn-1", pipeline.InputEvent{Kind: pipeline.InputAgentRequest, Text: "hi", Metadata: map[string]any{"chain": tt.chain}})
				var err error
				if send {
					err = ts.Agents.Send(context.Background(), tt.target, "hello", tt.o)
				} else {
					var got string
					got, err = ts.Agents.Request(context.Background(), tt.target, "hello", tt.o)
					if got != "" {
						t.Errorf("Request answered %q", got)
					}
				}
				if errText(err) != tt.want {
					t.Fatalf("err = %v\nwant %s", err, tt.want)
				}
				if tt.is != nil && !errors.Is(err, tt.is) {
					t.Errorf("%v does not match %v", err, tt.is)
				}
				if n := len(f.delivered()); n != 0 {
					t.Errorf("%d turns run, want none", n)
				}
			})
		}
	}
}

// TestAgentRequest: Request runs the target's turn with the caller's
// metadata, the chain of callers and the task chain, in the caller's
// instance key unless the call names one, and answers its response; the
// wait it recorded is gone after.
func TestAgentRequest(t *testing.T) {
	f := newFixture(t, nil)
	f.onDeliver(func(context.Context, int, delivery) (*pipeline.TurnResult, error) {
		return &pipeline.TurnResult{Response: pipeline.Message{Content: "four"}}, nil
	})
	ts := f.turn("lead", "k", "turn-1", pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "hi",
		Metadata: map[string]any{"chain": []string{"boss/k"}, "taskChain": []any{"boss/k"}}})
	got, err := ts.Agents.Request(context.Background(), "worker", "two plus two", pipeline.AgentCallOptions{Metadata: map[string]any{"topic": "math"}})
	if err != nil || got != "four" {
		t.Fatalf("Request = %q, %v; want four", got, err)
	}
	if _, err := ts.Agents.Request(context.Background(), "worker", "again", pipeline.AgentCallOptions{InstanceKey: "k2"}); err != nil {
		t.Fatal(err)
	}
	dls := f.delivered()
	want := delivery{"worker", "k", pipeline.InputEvent{Kind: pipeline.InputAgentRequest, Text: "two plus two", Metadata: map[string]any{
		"topic": "math", "callerAgent": "lead", "callerInstanceKey": "k", "callerTurnId": "turn-1", "callSource": "extension-middleware",
		"chain": []string{"boss/k", "lead/k"}, "taskChain": []string{"boss/k"}}}}
	if len(dls) != 2 || !reflect.DeepEqual(dls[0], want) {
		t.Fatalf("turns run = %+v\nwant first %+v", dls, want)
	}
	if dls[1].key != "k2" {
		t.Errorf("second call ran in %q, want k2", dls[1].key)
	}
	if len(f.d.waits) != 0 {
		t.Errorf("waits after the calls = %v, want none", f.d.waits)
	}
}

// TestAgentRequestTimeout: a Request whose turn does not answer within
// its timeout (the call's, else Env.Timeout) aborts the turn and says so;
// a turn that fails otherwise is named with its instance.
func TestAgentRequestTimeout(t *testing.T) {
	f := newFixture(t, nil, func(e *Env) { e.Timeout = 20 * time.Millisecond })
	f.onDeliver(func(ctx context.Context, n int, _ delivery) (*pipeline.TurnResult, error) {
		if n == 3 {
			return nil, errors.New("model down")
		}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	ts := f.turn("lead", "k", "turn-1", pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "hi"})
	tests := []struct {
		timeout time.Duration
		want    string
	}{
		{0, `call agent "worker" instance "k": no answer within 20ms (its turn was aborted): context deadline exceeded`},
		{10 * time.Millisecond, `call agent "worker" instance "k": no answer within 10ms (its turn was aborted): context deadline exceeded`},
		{0, `call agent "worker" instance "k": model down`},
	}
	for _, tt := range tests {
		_, err := ts.Agents.Request(context.Background(), "worker", "hello", pipeline.AgentCallOptions{Timeout: tt.timeout})
		if errText(err) != tt.want {
			t.Errorf("Request = %v\nwant %s", err, tt.want)
		}
	}
	// The caller's own context ending is not the call's timeout.
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	f.onDeliver(func(ctx context.Context, _ int, _ delivery) (*pipeline.TurnResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	_, err := ts.Agents.Request(ctx, "worker", "hello", pipeline.AgentCallOptions{Timeout: time.Hour})
	if want := `call agent "worker" instance "k": context deadline exceeded`; errText(err) != want {
		t.Errorf("Request with its caller's context ended = %v\nwant %s", err, want)
	}
}

// TestAgentRequestWaitCycle: two turns outside any chain that call each
// other's instance: the second call is refused with ErrCycle by the
// wait-for graph instead of waiting for the first's timeout.
func TestAgentRequestWaitCycle(t *testing.T) {
	f := newFixture(t, nil)
	b := newBlocker()
	f.onDeliver(b.deliver)
	lead := f.turn("lead", "k", "turn-1", pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "hi"})
	worker := f.turn("worker", "k", "turn-2", pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "hi"})
	done := make(chan error, 1)
	go func() {
		_, err := lead.Agents.Request(context.Background(), "worker", "hello", pipeline.AgentCallOptions{})
		done <- err
	}()
	<-b.started
	_, err := worker.Agents.Request(context.Background(), "lead", "hello", pipeline.AgentCallOptions{})
	want := `call agent "lead": agent call cycle: worker/k → lead/k → worker/k (a turn of lead/k waits for worker/k already)`
	if errText(err) != want || !errors.Is(err, ErrCycle) {
		t.Errorf("the second call = %v\nwant %s", err, want)
	}
	close(b.release)
	if err := <-done; err != nil {
		t.Errorf("the first call = %v", err)
	}
	if len(f.d.waits) != 0 {
		t.Errorf("waits after the calls = %v, want none", f.d.waits)
	}
	// Once the first call ended, the same call is no cycle.
	if _, err := worker.Agents.Request(context.Background(), "lead", "hello", pipeline.AgentCallOptions{}); err != nil {
		t.Errorf("the call after the first ended = %v", err)
	}
}

// TestAgentSend: Send starts the target's turn without waiting for it;
// Wait waits for it as for a task's turn; a closing runtime refuses it
// with Env.Closed and runs nothing.
func TestAgentSend(t *testing.T) {
	f := newFixture(t, nil)
	b := newBlocker()
	f.onDeliver(b.deliver)
	ts := f.turn("lead", "k", "turn-1", pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "hi"})
	if err := ts.Agents.Send(context.Background(), "worker", "hello", pipeline.AgentCallOptions{}); err != nil {
		t.Fatal(err)
	}
	<-b.started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.d.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait while the send's turn runs = %v, want context.Canceled", err)
	}
	close(b.release)
	f.wait()
	if e, l := f.gate.counts(); e != 1 || l != 1 {
		t.Errorf("gate entered %d times and left %d, want 1 and 1", e, l)
	}
	if dls := f.delivered(); len(dls) != 1 || dls[0].agent != "worker" || dls[0].key != "k" || dls[0].in.Metadata["callSource"] != "extension-middleware" {
		t.Errorf("turns run = %+v, want worker/k's", dls)
	}

	f.gate.closed = true
	if err := ts.Agents.Send(context.Background(), "worker", "hello", pipeline.AgentCallOptions{}); err != errClosed {
		t.Errorf("Send while closing = %v, want Env.Closed", err)
	}
	f.wait()
	if n := len(f.delivered()); n != 1 {
		t.Errorf("%d turns run, want the first alone", n)
	}
}
