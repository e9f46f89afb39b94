package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/runtime"
)

// flaky is a server that answers each call with the next of its answers,
// the last one from then on, and records the calls and their bodies.
type flaky struct {
	mu      sync.Mutex
	answers []answer
	calls   []string
}

type answer struct {
	status     int
	retryAfter string
	body       string
}

const unavailableBody = `{"error": {"code": "unavailable", "status": 503, "message": "the store is unavailable for a moment (a NATS server is down or electing a leader); try again: store: unavailable"}}`

func (f *flaky) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.calls = append(f.calls, r.Method+" "+r.URL.Path+" "+string(b))
	a := f.answers[min(len(f.calls), len(f.answers))-1]
	f.mu.Unlock()
	if a.retryAfter != "" {
		w.Header().Set("Retry-After", a.retryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	io.WriteString(w, a.body)
}

// TestRemoteRetriesUnavailable: a call answered 503 with a Retry-After is
// made again, as it was, after that wait (capped), saying so on stderr,
// when it is safe to repeat: a GET, a message whose turn did not start, an
// action; it gives up after its retries, naming the status and the
// server's message; a message whose turn started, or a 503 without a
// Retry-After, is not made again.
func TestRemoteRetriesUnavailable(t *testing.T) {
	unavailable := answer{503, "2", unavailableBody}
	started := answer{503, "2", `{"error": {"code": "unavailable", "status": 503, "message": "the store is unavailable for a moment; try again: commit", "result": {"turn_id": "turn-000007", "finish_reason": "error"}}}`}
	tests := []struct {
		name    string
		answers []answer
		call    func(c *remote) error
		calls   int
		waits   []time.Duration
		err     string // "" for none
		stderr  string // each line of it
	}{
		{"a read, unavailable twice", []answer{unavailable, unavailable, {200, "", `{"items": []}`}},
			func(c *remote) error {
				_, err := c.Pending(context.Background(), ledger.Filter{Open: true})
				return err
			},
			3, []time.Duration{2 * time.Second, 2 * time.Second}, "",
			strings.Repeat("the server answered 503 unavailable (the store is unavailable for a moment (a NATS server is down or electing a leader); try again: store: unavailable); trying again in 2s\n", 2)},
		{"a message whose turn did not start", []answer{unavailable, {200, "", `{"result": {"turn_id": "turn-000001", "finish_reason": "text"}}`}},
			func(c *remote) error {
				res, err := c.Send(context.Background(), "a", "k", runtime.UserMessage("hi"))
				if err == nil && res.TurnID != "turn-000001" {
					return fmt.Errorf("result %+v", res)
				}
				return err
			},
			2, []time.Duration{2 * time.Second}, "", "trying again in 2s\n"},
		{"a message whose turn started", []answer{started, {200, "", `{}`}},
			func(c *remote) error {
				_, err := c.Send(context.Background(), "a", "k", runtime.UserMessage("hi"))
				return err
			},
			1, nil, "the store is unavailable for a moment; try again: commit", ""},
		{"a long Retry-After is capped", []answer{{503, "3600", unavailableBody}, {200, "", `{"tasks": []}`}},
			func(c *remote) error { _, err := c.Tasks(context.Background(), "", ""); return err },
			2, []time.Duration{maxRetryWait}, "", "trying again in 10s\n"},
		{"no Retry-After", []answer{{503, "", `{"error": {"code": "agent_unavailable", "status": 503, "message": "agent a is unavailable"}}`}, {200, "", `{}`}},
			func(c *remote) error { _, err := c.Pending(context.Background(), ledger.Filter{}); return err },
			1, nil, "agent a is unavailable", ""},
		{"always unavailable", []answer{unavailable},
			func(c *remote) error { _, err := c.Pending(context.Background(), ledger.Filter{}); return err },
			11, []time.Duration{2 * time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second,
				2 * time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second},
			"the server answered 503 unavailable to 11 tries in 20s: the store is unavailable for a moment (a NATS server is down or electing a leader); try again: store: unavailable",
			strings.Repeat("trying again in 2s\n", 10)},
		{"always unavailable, long waits", []answer{{503, "8", unavailableBody}},
			func(c *remote) error { _, err := c.Pending(context.Background(), ledger.Filter{}); return err },
			4, []time.Duration{8 * time.Second, 8 * time.Second, 8 * time.Second},
			"the server answered 503 unavailable to 4 tries in 24s: the store is unavailable", strings.Repeat("trying again in 8s\n", 3)},
		{"an action the earlier try applied", []answer{unavailable, {409, "", `{"error": {"code": "already_resolved", "status": 409, "message": "pending item \"q1\": already resolved (it is answered)"}}`}},
			func(c *remote) error {
				_, err := c.Answer(context.Background(), "q1", "yes")
				if err != nil && !errors.Is(err, ledger.ErrResolved) {
					return fmt.Errorf("%w, which does not match ledger.ErrResolved", err)
				}
				return err
			},
			2, []time.Duration{2 * time.Second},
			`pending item "q1": already resolved (it is answered) (an earlier try of this call, answered 503, may have been the one that resolved it)`,
			"trying again in 2s\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &flaky{answers: tt.answers}
			ts := httptest.NewServer(f)
			defer ts.Close()
			var stderr bytes.Buffer
			var waits []time.Duration
			c := &remote{base: ts.URL, token: "tok", hc: ts.Client(), stderr: &stderr,
				sleep: func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return nil }}
			err := tt.call(c)
			switch {
			case tt.err == "" && err != nil:
				t.Errorf("error %v", err)
			case tt.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.err)):
				t.Errorf("error %v\nwant one starting %q", err, tt.err)
			}
			if len(f.calls) != tt.calls {
				t.Errorf("%d calls, want %d: %q", len(f.calls), tt.calls, f.calls)
			}
			for _, call := range f.calls[1:] {
				if call != f.calls[0] {
					t.Errorf("a call made again differs: %q, first %q", call, f.calls[0])
				}
			}
			if fmt.Sprint(waits) != fmt.Sprint(tt.waits) {
				t.Errorf("waits %v, want %v", waits, tt.waits)
			}
			lines, want := strings.SplitAfter(stderr.String(), "\n"), strings.SplitAfter(tt.stderr, "\n")
			if len(lines) != len(want) {
				t.Fatalf("stderr:\n%s\nwant:\n%s", stderr.String(), tt.stderr)
			}
			for i := range lines {
				if !strings.HasSuffix(lines[i], want[i]) || !strings.HasPrefix(lines[i], "the server answered 503 unavailable (") && lines[i] != "" {
					t.Errorf("stderr line %q, want one ending %q", lines[i], want[i])
				}
			}
		})
	}
}

// TestRemoteRetryWaitEnds: a retry's wait ends with the call's context,
// which the error names beside the server's.
func TestRemoteRetryWaitEnds(t *testing.T) {
	f := &flaky{answers: []answer{{503, "1", unavailableBody}}}
	ts := httptest.NewServer(f)
	defer ts.Close()
	c := &remote{base: ts.URL, token: "tok", hc: ts.Client()}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Pending(ctx, ledger.Filter{})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "the store is unavailable") || len(f.calls) != 1 {
		t.Errorf("error %v after %d calls; want the server's and the deadline, after 1", err, len(f.calls))
	}
}
