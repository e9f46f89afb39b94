package cassettetest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ganglion-dev/ganglion/internal/golden"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/cassette"
	"github.com/ganglion-dev/ganglion/runtime/cassette/cassettetest"
	"github.com/ganglion-dev/ganglion/runtime/config"
	_ "github.com/ganglion-dev/ganglion/runtime/model/openai" // registers "openai"
)

// openAIServer is an OpenAI-compatible chat completions endpoint: asked
// without a tool result in the conversation, it streams a read_file
// call, piece by piece; with one, it answers from it. It counts requests.
func openAIServer(t *testing.T, apiKey string) (*httptest.Server, *atomic.Int32) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Header.Get("Authorization") != "Bearer "+apiKey {
			http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
			return
		}
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		chunk := func(delta, finish string) string {
			f := "null"
			if finish != "" {
				f = `"` + finish + `"`
			}
			return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`
		}
		var events []string
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "tool" {
			text, _ := json.Marshal(fmt.Sprintf("The notes say: %v", last.Content))
			events = []string{chunk(`{"role":"assistant","content":""}`, ""), chunk(`{"content":"Done. "}`, ""), chunk(`{"content":`+string(text)+`}`, ""), chunk(`{}`, "stop")}
		} else {
			events = []string{
				chunk(`{"role":"assistant","content":"Reading."}`, ""),
				chunk(`{"tool_calls":[{"index":0,"id":"call_Xy7","type":"function","function":{"name":"read_file","arguments":""}}]}`, ""),
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"path\":"}}]}`, ""),
				chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"\"notes.txt\"}"}}]}`, ""),
				chunk(`{}`, "tool_calls"),
			}
		}
		events = append(events, `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-test","choices":[],"usage":{"prompt_tokens":21,"completion_tokens":7,"total_tokens":28}}`, "[DONE]")
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			fmt.Fprintf(w, "data: %s\n\n", e)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// TestRecordAgainstOpenAIServerReplaysOffline records a session against
// a local OpenAI-compatible server, then replays it with the server gone
// and no API key, and gets the identical transcript.
func TestRecordAgainstOpenAIServerReplaysOffline(t *testing.T) {
	const apiKey = "sk-test-3e8f1a9c7b2d4605e1f0"
	t.Setenv("CASSETTE_TEST_OPENAI_KEY", apiKey)
	srv, hits := openAIServer(t, apiKey)
	cfgText := `
workspace: ws
model: {provider: openai, name: gpt-test, base_url: "` + srv.URL + `/v1", api_key_env: CASSETTE_TEST_OPENAI_KEY}
agents:
  - name: assistant
    system: You read files.
    tools: [read_file]
    extensions: [{name: audit}]
`
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "ws"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "ws", "notes.txt"), []byte("ship on Friday\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "ganglion.yaml"), []byte(cfgText), 0o644))
	cfg, err := config.Load(filepath.Join(dir, "ganglion.yaml"))
	must(t, err)
	inputs := []cassette.Input{{Op: "send", Agent: "assistant", Instance: "default", Input: &pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: "What do the notes say?"}}}
	live, tape := record(t, cfg, inputs)
	if !strings.Contains(live, `-> text_response turn-1: "Done. The notes say: ship on Friday\n"`) || hits.Load() != 2 {
		t.Fatalf("the live session (%d requests):\n%s", hits.Load(), live)
	}
	if bytes.Contains(tape, []byte(apiKey)) {
		t.Fatal("the cassette holds the API key")
	}
	for _, want := range []string{
		`"kind":"tool_call_delta","tool_call_id":"call_Xy7","arguments":"{\"path\":"}`, // streamed as it came
		`"kind":"usage","usage":{"input_tokens":21,"output_tokens":7}}`,
		`"model_name":"gpt-test","system":"You read files."`,
	} {
		if !bytes.Contains(tape, []byte(want)) {
			t.Errorf("the cassette lacks %s", want)
		}
	}

	srv.Close()
	t.Setenv("CASSETTE_TEST_OPENAI_KEY", "")
	must(t, os.Remove(filepath.Join(dir, "ws", "notes.txt")))
	c, err := cassette.Read(bytes.NewReader(tape))
	must(t, err)
	res, err := cassettetest.Replay(t.Context(), c, cassettetest.Options{Config: cfg})
	must(t, err)
	if len(res.Divergences) > 0 {
		t.Errorf("divergences: %v", res.Divergences)
	}
	if res.Transcript != live {
		t.Errorf("the offline replay differs:\n%s", golden.Diff("recording", "replay", live, res.Transcript))
	}
	if hits.Load() != 2 {
		t.Errorf("the replay called the server: %d requests", hits.Load())
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
