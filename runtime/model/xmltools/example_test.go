package xmltools_test

import (
	"encoding/json"
	"fmt"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/model"
	"github.com/ganglion-dev/ganglion/runtime/model/xmltools"
)

func ExampleParser() {
	readFile := pipeline.Tool{ToolSpec: pipeline.ToolSpec{Name: "read_file",
		Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"line":{"type":"integer"}}}`)}}
	p := xmltools.NewParser([]pipeline.Tool{readFile})
	var chunks []model.Chunk
	for _, piece := range []string{"Is <b>a < b</b>? <rea", "d_file>\n<path>main.go</path>\n<li", "ne>12</line>\n</read_file>"} {
		chunks = append(chunks, p.Feed(piece)...)
	}
	chunks = append(chunks, p.Close()...)
	for _, c := range chunks {
		switch c.Kind {
		case model.KindText:
			fmt.Printf("%s %q\n", c.Kind, c.Text)
		case model.KindToolCallDelta:
			fmt.Printf("%s %s %s\n", c.Kind, c.ToolCallID, c.ArgumentsDelta)
		default:
			fmt.Printf("%s %s %s\n", c.Kind, c.ToolCallID, c.ToolName)
		}
	}
	// Output:
	// text "Is <b>a < b</b>? "
	// tool_call_start xml_call_1 read_file
	// tool_call_delta xml_call_1 {"path":"main.go","line":12}
	// tool_call_end xml_call_1 read_file
}

func ExampleDiagnose() {
	// The model's answer was cut off in the middle of a call; the parser
	// reported it with its raw text as arguments.
	call := pipeline.ToolCall{ID: "xml_call_1", Name: "read_file", Arguments: json.RawMessage("<read_file>\n<path>main.go")}
	why, malformed := xmltools.Diagnose(call)
	fmt.Println(malformed, why)
	// Output:
	// true the <path> parameter was never closed with </path>, so the rest of your answer was taken as its value
}
