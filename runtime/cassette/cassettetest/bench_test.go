package cassettetest_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/cassette"
	"github.com/ganglion-dev/ganglion/runtime/cassette/cassettetest"
)

// BenchmarkReplay100Turns replays a cassette of 100 turns, each a read_file
// call and an answer (200 model calls, 100 tool results), into its
// transcript: what ganglion ext test does per cassette.
func BenchmarkReplay100Turns(b *testing.B) {
	const script = `
agents:
  assistant:
    fallback:
      steps:
        - text: "Reading."
          tool_calls: [{name: read_file, args: {path: notes.txt}}]
          usage: {input_tokens: 120, output_tokens: 12}
        - text: "Turn {{ .Turn }}: {{ .LastMessage }}"
          usage: {input_tokens: 140, output_tokens: 20}
`
	_, cfg := writeSession(b, sessionConfig, script)
	var inputs []cassette.Input
	for i := range 100 {
		inputs = append(inputs, cassette.Input{Op: "send", Agent: "assistant", Instance: "default",
			Input: &pipeline.InputEvent{Kind: pipeline.InputUserMessage, Text: fmt.Sprintf("question %d", i+1)}})
	}
	var buf bytes.Buffer
	rec := cassette.NewRecorder(&buf)
	live, err := cassettetest.Record(b.Context(), rec, inputs, cassettetest.Options{Config: cfg})
	if err != nil {
		b.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		b.Fatal(err)
	}
	c, err := cassette.Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		res, err := cassettetest.Replay(b.Context(), c, cassettetest.Options{Config: cfg})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Divergences) > 0 || res.Transcript != live.Transcript {
			b.Fatalf("the replay differs: %v", res.Divergences)
		}
	}
	b.ReportMetric(float64(buf.Len()), "cassette-bytes")
	b.ReportMetric(float64(len(c.Inputs())), "turns")
}
