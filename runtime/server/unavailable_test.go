package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/internal/natstest"
	_ "github.com/ganglion-dev/ganglion/runtime/cluster" // the cluster, linked as a program links it
)

// TestStoreUnavailable: in cluster mode, while the NATS server is down, a
// message is answered 503 "unavailable" with a Retry-After, saying the
// outage is transient, and its result shows that no turn started: not
// 500, nor 504.
func TestStoreUnavailable(t *testing.T) {
	s := natstest.Server(t)
	h := newHarnessConfig(t, testConfig+fmt.Sprintf("cluster: {url: %q, lease_ttl: 2s}\n", s.ClientURL()), nil)
	if code, body := h.call("POST", "/v1/agents/b/instances/k/messages", `{"text": "hi"}`); code != 200 {
		t.Fatalf("a message before the outage = %d %s", code, body)
	}
	s.Shutdown()
	s.WaitForShutdown()
	req := h.request("POST", "/v1/agents/b/instances/other/messages", `{"text": "hi"}`)
	res, body := h.do(req)
	var e struct {
		Error struct {
			Code       string
			Status     int
			Message    string
			RetryAfter int `json:"retry_after"`
			Result     *struct {
				TurnID string `json:"turn_id"`
			}
		}
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("%d %s: %v", res.StatusCode, body, err)
	}
	const msg = "the store is unavailable for a moment (a NATS server is down or electing a leader); try again: "
	if res.StatusCode != 503 || e.Error.Code != "unavailable" || e.Error.Status != 503 || !strings.HasPrefix(e.Error.Message, msg) {
		t.Errorf("a message while NATS is down = %d %s\nwant 503 unavailable, its message starting %q", res.StatusCode, body, msg)
	}
	if got := res.Header.Get("Retry-After"); got != "2" || e.Error.RetryAfter != 2 {
		t.Errorf("Retry-After %q, retry_after %d; want 2 and 2", got, e.Error.RetryAfter)
	}
	if r := e.Error.Result; r != nil && r.TurnID != "" {
		t.Errorf("the result has turn %s: no turn started", r.TurnID)
	}
}

// TestClosedRetryAfter: a process that stopped answers 503 "closed" with
// a Retry-After: in a cluster another process takes its instances over.
func TestClosedRetryAfter(t *testing.T) {
	h := newHarness(t)
	h.rt.Close()
	res, body := h.do(h.request("POST", "/v1/agents/b/instances/k/messages", `{"text": "hi"}`))
	if res.StatusCode != 503 || !strings.Contains(body, `"code":"closed"`) || res.Header.Get("Retry-After") != "2" || !strings.Contains(body, `"retry_after":2`) {
		t.Errorf("a message after Close = %d %v %s; want 503 closed, Retry-After 2", res.StatusCode, res.Header, body)
	}
}
