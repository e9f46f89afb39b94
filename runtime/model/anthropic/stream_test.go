package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/runtime/model"
)

// Tests of the stream: recorded answers, tool arguments, edge cases,
// cancellation and Close.

func TestStreamRecordings(t *testing.T) {
	tests := []struct {
		file string
		want []string
	}{
		{"text.sse", []string{
			`text:"Hello"`,
			`text:"! Ça va? 😀"`,
			`text:" Line\nbreak."`,
			`usage:25/15/0/0`,
		}},
		{"thinking.sse", []string{
			`reasoning:"The user asks 2+2."`,
			`reasoning:" That is 4."`,
			`text:"2 + 2 = 4."`,
			`usage:40/120/0/0`,
		}},
		{"tool_use.sse", []string{
			`text:"Let me read it."`,
			`start:toolu_01T1x1fJ34qAmk2tNTrN7Up6:read_file`,
			`delta:toolu_01T1x1fJ34qAmk2tNTrN7Up6:"{\"path\": \"no"`,
			`delta:toolu_01T1x1fJ34qAmk2tNTrN7Up6:"tes.txt\"}"`,
			`end:toolu_01T1x1fJ34qAmk2tNTrN7Up6`,
			`usage:472/89/0/0`,
		}},
		{"tool_use_two.sse", []string{
			`start:toolu_01A:grep`,
			`delta:toolu_01A:"{\"path\": \"src/caf"`,
			`delta:toolu_01A:"é/na"`,
			`delta:toolu_01A:"ïve.go\", \"pattern\": \"say \\"`,
			`delta:toolu_01A:"\"hi\\\"\\"`,
			`delta:toolu_01A:"n\", \"emoji\": \"\\ud8"`,
			`delta:toolu_01A:"3d\\ude00 ok\"}"`,
			`end:toolu_01A`,
			`start:toolu_01B:shell`,
			`delta:toolu_01B:"{\"cm"`,
			`delta:toolu_01B:"d\": \"echo \\u00"`,
			`delta:toolu_01B:"e9\\ud83d"`,
			`delta:toolu_01B:"\\ude00\", \"n\""`,
			`delta:toolu_01B:": 2}"`,
			`end:toolu_01B`,
			`usage:500/150/0/0`,
		}},
		{"tool_use_complete_input.sse", []string{
			`start:toolu_01C:get_weather`,
			`delta:toolu_01C:"{\"city\":\"Zürich\",\"days\":3}"`,
			`end:toolu_01C`,
			`start:toolu_01D:now`,
			`delta:toolu_01D:"{}"`,
			`end:toolu_01D`,
			`usage:30/40/0/0`,
		}},
		{"usage_cache.sse", []string{
			`text:"Cached."`,
			`usage:12/7/20480/1024`,
		}},
		{"error_midstream.sse", []string{
			`text:"Partial"`,
			`usage:25/1/0/0`,
			`error:transient error:anthropic: transient error: Overloaded`,
		}},
		{"error_first.sse", []string{
			`error:transient error:anthropic: transient error: Overloaded`,
		}},
		{"truncated.sse", []string{
			`text:"Cut"`,
			`usage:25/1/0/0`,
			`error:transient error:anthropic: transient error: stream ended before message_stop`,
		}},
	}
	for _, tt := range tests {
		for _, piece := range []int{0, 3} {
			t.Run(fmt.Sprintf("%s/piece=%d", tt.file, piece), func(t *testing.T) {
				t.Parallel()
				api := newFakeAPI(t, reply{file: tt.file, piece: piece})
				p := newProvider(t, api.srv.URL, nil)
				s, err := p.Stream(context.Background(), userRequest("hi"))
				if err != nil {
					t.Fatal(err)
				}
				got := drain(t, s)
				equalLines(t, shows(got), tt.want)
				// The deltas of each call make its arguments, valid JSON.
				args := map[string]string{}
				for _, c := range got {
					if c.Kind == model.KindToolCallDelta {
						args[c.ToolCallID] += c.ArgumentsDelta
					}
				}
				for id, a := range args {
					if !json.Valid([]byte(a)) {
						t.Errorf("arguments of %s are not JSON: %s", id, a)
					}
				}
			})
		}
	}
}

func TestToolArgumentsDecode(t *testing.T) {
	api := newFakeAPI(t, reply{file: "tool_use_two.sse"})
	p := newProvider(t, api.srv.URL, nil)
	s, err := p.Stream(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	args := map[string]string{}
	for _, c := range drain(t, s) {
		args[c.ToolCallID] += c.ArgumentsDelta
	}
	var a struct{ Path, Pattern, Emoji string }
	if err := json.Unmarshal([]byte(args["toolu_01A"]), &a); err != nil {
		t.Fatal(err)
	}
	if a.Path != "src/café/naïve.go" || a.Pattern != "say \"hi\"\n" || a.Emoji != "😀 ok" {
		t.Errorf("grep arguments = %+v", a)
	}
	var b struct {
		Cmd string
		N   int
	}
	if err := json.Unmarshal([]byte(args["toolu_01B"]), &b); err != nil {
		t.Fatal(err)
	}
	if b.Cmd != "echo é😀" || b.N != 2 {
		t.Errorf("shell arguments = %+v", b)
	}
}

func TestCancel(t *testing.T) {
	t.Run("before", func(t *testing.T) {
		api := newFakeAPI(t, reply{file: "text.sse"})
		p := newProvider(t, api.srv.URL, nil)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := p.Stream(ctx, userRequest("hi"))
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error = %v", err)
		}
		if k := model.KindOf(err); k == model.ErrorRateLimit || k == model.ErrorTransient {
			t.Errorf("kind %v is retryable", k)
		}
	})

	t.Run("while waiting for headers", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body) // so that the server sees the client go
			cancel()
			<-r.Context().Done()
		}))
		defer srv.Close()
		p := newProvider(t, srv.URL, nil)
		_, err := p.Stream(ctx, userRequest("hi"))
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error = %v", err)
		}
	})

	t.Run("mid-stream", func(t *testing.T) {
		data, err := os.ReadFile("testdata/truncated.sse")
		if err != nil {
			t.Fatal(err)
		}
		api := newFakeAPI(t, reply{body: string(data), hang: true})
		p := newProvider(t, api.srv.URL, nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s, err := p.Stream(ctx, userRequest("hi"))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		c, err := s.Recv()
		if err != nil || show(c) != `text:"Cut"` {
			t.Fatalf("first chunk %s, %v", show(c), err)
		}
		time.AfterFunc(20*time.Millisecond, cancel)
		var last model.Chunk
		for {
			c, err := s.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			last = c
		}
		if last.Kind != model.KindError || !errors.Is(last.Err, context.Canceled) {
			t.Errorf("last chunk %s, want an error matching context.Canceled", show(last))
		}
	})

	t.Run("through WithRetry", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body) // so that the server sees the client go
			cancel()
			<-r.Context().Done()
		}))
		defer srv.Close()
		var waits []time.Duration
		p := model.WithRetry(newProvider(t, srv.URL, nil), retryPolicy(&waits))
		_, err := p.Stream(ctx, userRequest("hi"))
		if !errors.Is(err, context.Canceled) || len(waits) != 0 {
			t.Errorf("error = %v after %d retries", err, len(waits))
		}
	})
}

func TestClose(t *testing.T) {
	api := newFakeAPI(t, reply{file: "text.sse"})
	p := newProvider(t, api.srv.URL, nil)

	s, err := p.Stream(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := s.Recv(); err == nil {
		t.Error("Recv after Close returned no error")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	s, err = p.Stream(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := s.Recv(); err != nil || c.Kind != model.KindText {
		t.Fatalf("Recv = %s, %v", show(c), err)
	}
	s.Close()
	for range 3 {
		if _, err := s.Recv(); err == nil {
			t.Error("Recv after Close returned no error")
		}
	}

	s, err = p.Stream(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	drain(t, s)
	for range 2 {
		if _, err := s.Recv(); err == nil {
			t.Error("Recv after the end and Close returned no error")
		}
	}
}

// sse builds a stream body from (event, data) pairs.
func sse(pairs ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintf(&b, "event: %s\ndata: %s\n\n", pairs[i], pairs[i+1])
	}
	return b.String()
}

const messageStart = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-test","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}`

// TestStreamEdges covers what the recordings do not: cumulative counts in
// message_delta, text in content_block_start, blocks left open at
// message_stop, and protocol errors.
func TestStreamEdges(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []string
	}{
		{"cumulative usage in message_delta", sse(
			"message_start", messageStart,
			"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"Hi"}}`,
			"content_block_stop", `{"type":"content_block_stop","index":0}`,
			"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":12,"cache_read_input_tokens":5,"cache_creation_input_tokens":3,"output_tokens":9}}`,
			"message_stop", `{"type":"message_stop"}`,
		), []string{`text:"Hi"`, `usage:12/9/5/3`}},
		{"null counts in message_delta", sse(
			"message_start", messageStart,
			"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":null,"output_tokens":4}}`,
			"message_stop", `{"type":"message_stop"}`,
		), []string{`usage:10/4/0/0`}},
		{"tool block open at message_stop", sse(
			"message_start", messageStart,
			"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_X","name":"t","input":{}}}`,
			"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`,
			"message_stop", `{"type":"message_stop"}`,
		), []string{`start:toolu_X:t`, `delta:toolu_X:"{\"a\":"`, `end:toolu_X`, `usage:10/1/0/0`}},
		{"thinking text in content_block_start", sse(
			"message_start", messageStart,
			"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"Hmm.","signature":"sig"}}`,
			"content_block_stop", `{"type":"content_block_stop","index":0}`,
			"message_stop", `{"type":"message_stop"}`,
		), []string{`reasoning:"Hmm."`, `usage:10/1/0/0`}},
		{"input_json_delta for no tool block", sse(
			"message_start", messageStart,
			"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}`,
			"message_stop", `{"type":"message_stop"}`,
		), []string{`error:error:anthropic: error: input_json_delta for content block 0, which is not an open tool_use block`}},
		{"malformed event", sse(
			"message_start", messageStart,
			"content_block_delta", `{"type":"content_block_delta",`,
		), []string{`error:transient error:anthropic: transient error: unexpected end of JSON input`}},
		{"empty body", "", []string{`error:transient error:anthropic: transient error: stream ended before message_stop`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := newFakeAPI(t, reply{body: tt.body})
			p := newProvider(t, api.srv.URL, nil)
			s, err := p.Stream(context.Background(), userRequest("hi"))
			if err != nil {
				t.Fatal(err)
			}
			equalLines(t, shows(drain(t, s)), tt.want)
		})
	}
}
