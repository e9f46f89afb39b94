//go:build !wasip1

package ganglion

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestWindow(t *testing.T) {
	f := newFake().use(t)
	f.windowJSON = []byte(`{"size":8000,"reserved_output":1000,"tokens":321,"sent":300,"messages":[` +
		`{"message":{"id":"msg-0","role":"user","content":"task"},"tokens":5,"unit":0,"keep":true,"summary":false},` +
		`{"message":{"id":"msg-1","role":"assistant","content":"noted"},"tokens":6,"unit":1,"keep":false,"summary":false}]}`)
	w := (&Step{conversation: conversation{hook{3}}}).Window()
	if w.Size() != 8000 || w.ReservedOutput() != 1000 || w.Tokens() != 321 || w.Sent() != 300 {
		t.Errorf("Size, ReservedOutput, Tokens, Sent = %d, %d, %d, %d, want 8000, 1000, 321, 300", w.Size(), w.ReservedOutput(), w.Tokens(), w.Sent())
	}
	msgs, err := w.Messages()
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Message.ID != "msg-0" || !msgs[0].Keep || msgs[1].Unit != 1 || msgs[1].Tokens != 6 || msgs[1].Message.Content != "noted" {
		t.Errorf("Messages() = %+v", msgs)
	}

	f.codes["window"] = int32(CodeInvalid)
	if _, err := w.Messages(); !errors.Is(err, ErrInvalid) || err.Error() != "ganglion: window: window refused by the fake" {
		t.Errorf("refused Messages() = %v", err)
	}
	func() {
		defer func() {
			if err, _ := recover().(error); !errors.Is(err, ErrInvalid) {
				t.Errorf("refused Size() panicked with %v, want the host's refusal", err)
			}
		}()
		w.Size()
	}()
}

func TestWindowApply(t *testing.T) {
	tests := []struct {
		name    string
		call    func(w *Window) (string, error)
		answer  string
		wantReq string
		want    string
	}{
		{
			name: "truncate", answer: `{}`,
			call:    func(w *Window) (string, error) { return "", w.Truncate([]string{"msg-1", "msg-2"}, "stale") },
			wantReq: `window_apply {"op":"truncate","ids":["msg-1","msg-2"],"reason":"stale"}`,
		},
		{
			name: "reduce", answer: `{"before":10,"after":7}`,
			call: func(w *Window) (string, error) {
				b, a, err := w.Reduce(0.75, "too long")
				return strings.Repeat("b", b) + strings.Repeat("a", a), err
			},
			wantReq: `window_apply {"op":"reduce","reason":"too long","keep":0.75}`,
			want:    "bbbbbbbbbbaaaaaaa",
		},
		{
			name: "condense", answer: `{"id":"msg-9"}`,
			call: func(w *Window) (string, error) {
				return w.Condense([]string{"msg-1"}, Message{Content: "summary"})
			},
			wantReq: `window_apply {"op":"condense","ids":["msg-1"],"summary":{"content":"summary"}}`,
			want:    "msg-9",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake().use(t)
			f.answers = []string{tt.answer}
			got, err := tt.call((&Step{conversation: conversation{hook{3}}}).Window())
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v, want %q", got, err, tt.want)
			}
			if len(f.hostReqs) != 1 || f.hostReqs[0] != tt.wantReq {
				t.Errorf("requests %q, want [%s]", f.hostReqs, tt.wantReq)
			}
		})
	}
	f := newFake().use(t)
	f.codes["window_apply"] = int32(CodeFailed)
	err := (&Step{conversation: conversation{hook{3}}}).Window().Truncate([]string{"msg-0"}, "")
	if !errors.Is(err, ErrFailed) || err.Error() != "ganglion: window_apply truncate: window_apply refused by the fake" {
		t.Errorf("refused Truncate = %v", err)
	}
}

// TestComplete: an answer too long for the buffer is asked for again with
// the very same request, which the host answers from what it kept rather
// than calling the model again (sdk/ABI.md, "Imports that act").
func TestComplete(t *testing.T) {
	f := newFake().use(t)
	long := strings.Repeat("s", 2*initialBuf)
	f.answers = []string{`{"text":"` + long + `","usage":{"input_tokens":100,"output_tokens":20}}`}
	m := (&Step{conversation: conversation{hook{3}}}).Models()
	c, err := m.Complete(CompletionRequest{System: "Summarise.", Messages: []Message{{Role: RoleUser, Content: "a b c"}}, Timeout: 5 * time.Second})
	if err != nil || c.Text != long || c.Usage != (Usage{InputTokens: 100, OutputTokens: 20}) {
		t.Fatalf("Complete = %d bytes of text, usage %+v, %v", len(c.Text), c.Usage, err)
	}
	req := `complete {"system":"Summarise.","messages":[{"role":"user","content":"a b c"}],"timeout_ms":5000}`
	if len(f.hostReqs) != 2 || f.hostReqs[0] != req || f.hostReqs[1] != req {
		t.Errorf("requests %q, want twice %s", f.hostReqs, req)
	}
	f.codes["complete"] = int32(CodeDenied)
	if _, err := m.Complete(CompletionRequest{}); !errors.Is(err, ErrDenied) {
		t.Errorf("refused Complete = %v", err)
	}
}
