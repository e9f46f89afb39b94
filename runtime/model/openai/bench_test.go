package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// benchStream builds a recorded stream of about size bytes, shaped as
// OpenAI streams it with include_usage: an id, the model, a fingerprint,
// "usage":null and an obfuscation pad in every event; mostly text deltas
// of a few characters, and every 50th event a piece of a tool call's
// arguments (with escaped quotes, as JSON arguments have).
func benchStream(size int) []byte {
	var b bytes.Buffer
	head := `{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":`
	tail := `,"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"nRqP3Ua"}`
	fmt.Fprintf(&b, "data: %s{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null}%s\n\n", head, tail)
	words := []string{" the", " model", " streams", " tokens", ",", " one", " at", " a", " time", ".", " Ünïcödé", " \\\"quoted\\\"", "\\n"}
	calls := 0
	for i := 0; b.Len() < size; i++ {
		if i%50 == 49 {
			if calls == 0 {
				fmt.Fprintf(&b, "data: %s{\"tool_calls\":[{\"index\":0,\"id\":\"call_bench\",\"type\":\"function\",\"function\":{\"name\":\"write_file\",\"arguments\":\"\"}}]}%s\n\n", head, tail)
			}
			calls++
			fmt.Fprintf(&b, "data: %s{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"path\\\": \\\"notes/%d.txt\\\", \"}}]}%s\n\n", head, calls, tail)
			continue
		}
		fmt.Fprintf(&b, "data: %s{\"content\":\"%s\"}%s\n\n", head, words[i%len(words)], tail)
	}
	fmt.Fprintf(&b, "data: %s{}%s\n\n", head, strings.Replace(tail, `"finish_reason":null`, `"finish_reason":"tool_calls"`, 1))
	fmt.Fprintf(&b, "data: {\"id\":\"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG\",\"object\":\"chat.completion.chunk\",\"created\":1741570283,\"model\":\"gpt-4o-2024-08-06\",\"system_fingerprint\":\"fp_eb9dce56a8\",\"choices\":[],\"usage\":{\"prompt_tokens\":1117,\"completion_tokens\":46,\"total_tokens\":1163,\"prompt_tokens_details\":{\"cached_tokens\":1024,\"audio_tokens\":0},\"completion_tokens_details\":{\"reasoning_tokens\":0,\"audio_tokens\":0,\"accepted_prediction_tokens\":0,\"rejected_prediction_tokens\":0}}}\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

// memTransport answers every request with body, from memory: no socket.
type memTransport struct{ body []byte }

func (t memTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{
		StatusCode: http.StatusOK,
		Status:     "200 OK",
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}},
		Body:          io.NopCloser(bytes.NewReader(t.body)),
		ContentLength: -1,
		Request:       req,
	}, nil
}

var benchReq = &model.Request{
	Model:    "gpt-4o",
	System:   "You are terse.",
	Messages: pipeline.MessageSlice{{Role: pipeline.RoleUser, Content: "Write the notes."}},
}

// BenchmarkStreamDecode measures the whole provider on a recorded stream of
// about 1 MB served from memory: the SDK's request and SSE framing, the
// provider's decoding and chunk assembly.
func BenchmarkStreamDecode(b *testing.B) {
	data := benchStream(1 << 20)
	p, err := build(Config{BaseURL: "http://bench.invalid/v1", HTTPClient: &http.Client{Transport: memTransport{data}}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var text, args int
	for b.Loop() {
		s, err := p.Stream(ctx, benchReq)
		if err != nil {
			b.Fatal(err)
		}
		text, args = 0, 0
		for {
			c, err := s.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			switch c.Kind {
			case model.KindText:
				text += len(c.Text)
			case model.KindToolCallDelta:
				args += len(c.ArgumentsDelta)
			case model.KindError:
				b.Fatal(c.Err)
			}
		}
		s.Close()
	}
	if text == 0 || args == 0 {
		b.Fatalf("decoded %d bytes of text and %d of arguments", text, args)
	}
}

// BenchmarkStreamDecodeSDK decodes the same stream with the SDK's own
// typed decoding (ssestream.Stream[ChatCompletionChunk]), plus the raw
// JSON lookup a reasoning field needs, for comparison: it is what the
// provider would cost had it used the SDK's decoding.
func BenchmarkStreamDecodeSDK(b *testing.B) {
	data := benchStream(1 << 20)
	svc := oa.NewChatCompletionService(option.WithBaseURL("http://bench.invalid/v1"), option.WithMaxRetries(0),
		option.WithHTTPClient(&http.Client{Transport: memTransport{data}}))
	ctx := context.Background()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		s := svc.NewStreaming(ctx, oa.ChatCompletionNewParams{Model: "gpt-4o", Messages: []oa.ChatCompletionMessageParamUnion{oa.UserMessage("Write the notes.")}})
		text := 0
		for s.Next() {
			c := s.Current()
			for _, ch := range c.Choices {
				text += len(ch.Delta.Content)
				if f, ok := ch.Delta.JSON.ExtraFields["reasoning_content"]; ok {
					var r string
					json.Unmarshal([]byte(f.Raw()), &r)
					text += len(r)
				}
				for _, tc := range ch.Delta.ToolCalls {
					text += len(tc.Function.Arguments)
				}
			}
		}
		if err := s.Err(); err != nil {
			b.Fatal(err)
		}
		s.Close()
		if text == 0 {
			b.Fatal("no text")
		}
	}
}
