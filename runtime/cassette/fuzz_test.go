package cassette

import (
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// FuzzRead: Read refuses or reads any text without panicking, and a
// cassette it reads plays back.
func FuzzRead(f *testing.F) {
	const head = `{"k":"cassette","version":1,"start":"2026-11-27T10:00:00Z"}` + "\n"
	for _, seed := range []string{
		"",
		head,
		head + `{"k":"input","op":"send","agent":"a","instance":"k","input":{"kind":"user_message","text":"hi"}}`,
		head + `{"k":"model","call":1,"agent":"a","instance":"k","turn_id":"turn-1","step":1,"messages":[{"role":"user","content":"hi"}],"tools":[]}` + "\n" +
			`{"k":"chunk","call":1,"ms":3,"kind":"text","text":"hello"}` + "\n" +
			`{"k":"chunk","call":1,"ms":4,"kind":"usage","usage":{"input_tokens":1,"output_tokens":2}}` + "\n" +
			`{"k":"model","call":2,"agent":"a","instance":"k","turn_id":"turn-2","step":1,"same":1,"messages":[{"role":"assistant","content":"hello"}]}` + "\n" +
			`{"k":"chunk","call":2,"ms":1,"kind":"error","error":{"kind":"rate limited","provider":"openai","status":429,"message":"slow down"}}`,
		head + `{"k":"tool","agent":"a","instance":"k","turn_id":"turn-1","step":1,"call_id":"c1","name":"read_file","arguments":"{}","content":"x","ms":0}`,
		head + `{"k":"clock","ns":[1000,-5,3]}` + "\n" + `{"k":"id","key":"task/a","id":"task_1"}`,
		head + `{"k":"event","topic":"turn.started","agent":"a","source":"runtime","data":{"kind":"user_message"}}`,
		head + `{"k":"model","call":1,"agent":"a","instance":"k","turn_id":"t","step":1,"messages":[],"open_error":{"message":"refused"}}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		c, err := Read(strings.NewReader(text))
		if err != nil {
			if c != nil {
				t.Fatal("a cassette with an error")
			}
			return
		}
		p := NewPlayer(c, Lenient()).tape()
		p.Clock(nil)()
		for _, cl := range c.calls {
			l := cl.line
			req := &model.Request{Agent: l.Agent, InstanceKey: l.Instance, TurnID: l.TurnID, Step: l.Step, Messages: pipeline.MessageSlice{}}
			pp, _ := p.Provider(l.Model, nil)
			s, err := pp.Stream(t.Context(), req)
			if err != nil {
				continue
			}
			for {
				if _, err := s.Recv(); err != nil {
					break
				}
			}
		}
	})
}
