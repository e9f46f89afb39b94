package scripted_test

import (
	"context"
	"fmt"
	"io"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/model"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
)

func ExampleParse() {
	script := []byte(`
agents:
  assistant:
    turns:
      - steps:
          - text: "Let me look."
            tool_calls:
              - name: read_file
                args: {path: notes.txt}
          - text: "The file says: {{ .LastMessage }}"
`)
	s, err := scripted.Parse("script.yaml", script)
	if err != nil {
		fmt.Println(err)
		return
	}
	req := &model.Request{
		Agent: "assistant",
		Turn:  1,
		Step:  1,
		Messages: pipeline.MessageSlice{
			{Role: pipeline.RoleUser, Content: "What is in my notes?"},
		},
	}
	st, err := s.Stream(context.Background(), req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	for {
		c, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s %q %q %q %q\n", c.Kind, c.Text, c.ToolCallID, c.ToolName, c.ArgumentsDelta)
	}
	// Output:
	// text "Let me look." "" "" ""
	// tool_call_start "" "call_1_1_1" "read_file" ""
	// tool_call_delta "" "call_1_1_1" "read_file" "{\"path\":\"notes.txt\"}"
	// tool_call_end "" "call_1_1_1" "read_file" ""
}

func ExampleParse_error() {
	_, err := scripted.Parse("script.yaml", []byte(`
agents:
  assistant:
    turns:
      - steps:
          - tool_calls:
              - args: {path: notes.txt}
`))
	fmt.Println(err)
	// Output:
	// script.yaml:7:17: tool call has no name
	//    4 |     turns:
	//    5 |       - steps:
	//    6 |           - tool_calls:
	// >  7 |               - args: {path: notes.txt}
	//                        ^
}

func ExampleLoad() {
	s, err := scripted.Load("testdata/example.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s.Agents())

	req := &model.Request{
		Agent:    "assistant",
		Turn:     5,
		Step:     1,
		Messages: pipeline.MessageSlice{{Role: pipeline.RoleUser, Content: "Will it rain? What's the weather?"}},
	}
	st, err := s.Stream(context.Background(), req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	for {
		c, err := st.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		switch c.Kind {
		case model.KindText:
			fmt.Println("text:", c.Text)
		case model.KindError:
			fmt.Println("error:", c.Err)
		}
	}

	req.Agent = "nobody"
	_, err = s.Stream(context.Background(), req)
	fmt.Println(err)
	// Output:
	// [assistant echo]
	// text: Checking the sky...
	// error: simulated provider failure
	// scripted model: no agent "nobody" in testdata/example.yaml (agents: assistant, echo)
}
