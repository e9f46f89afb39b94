package runtime_test

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/internal/logtest"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/model"
	"github.com/ganglion-dev/ganglion/runtime/model/scripted"
)

// summaryPrompt is the condense extension's instruction to the summariser.
const summaryPrompt = "Summarise the conversation below for the assistant who will continue it. " +
	"Keep the user's goals and conditions, decisions made, facts found (file paths, names, numbers), " +
	"what was tried and failed, and what remains to do. Be concise and factual; invent nothing."

const summaryHead = "[Summary of the earlier conversation]\n"

// marked renders a message with its ID and the condensation marks:
//
//	msg-3 assistant: hi [condensed_by msg-9]
func marked(m pipeline.Message) string {
	s := m.ID + " " + describe(m)
	if b, _ := m.Metadata[pipeline.MetaPinned].(bool); b {
		s += " [pinned]"
	}
	if b, _ := m.Metadata[pipeline.MetaTruncated].(bool); b {
		s += " [truncated]"
	}
	if c, _ := m.Metadata[pipeline.MetaCondensedBy].(string); c != "" {
		s += " [condensed_by " + c + "]"
	}
	if v, ok := m.Metadata[pipeline.MetaSummary]; ok {
		s += fmt.Sprintf(" [summary %v]", v)
	}
	return s
}

func markedAll(msgs []pipeline.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = marked(m)
	}
	return out
}

// ids renders messages as "ID role: content", without marks: what a model
// request shows.
func ids(msgs []pipeline.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID + " " + describe(m)
	}
	return out
}

// ctxWindowErr is what a provider says when the prompt does not fit.
var ctxWindowErr = &model.Error{Kind: model.ErrorContextWindow, Provider: "test", Status: 400, Message: "prompt is too long"}

// windowModel hands requests to p, except that fail, given a request and
// the number of the agent's calls so far (from 1), may fail it: with an
// error from Stream, or, when inStream, with an error chunk. fail may
// also wait for ctx.
type windowModel struct {
	p        model.Provider
	fail     func(ctx context.Context, req *model.Request, n int) error
	inStream bool

	mu    sync.Mutex
	calls map[string]int
}

func (w *windowModel) Stream(ctx context.Context, req *model.Request) (model.Stream, error) {
	w.mu.Lock()
	if w.calls == nil {
		w.calls = map[string]int{}
	}
	w.calls[req.Agent]++
	n := w.calls[req.Agent]
	w.mu.Unlock()
	if w.fail != nil {
		if err := w.fail(ctx, req, n); err != nil {
			if w.inStream {
				return &chunkStream{chunks: []model.Chunk{{Kind: model.KindError, Err: err}}}, nil
			}
			return nil, err
		}
	}
	return w.p.Stream(ctx, req)
}

func (w *windowModel) count(agent string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.calls[agent]
}

type chunkStream struct{ chunks []model.Chunk }

func (s *chunkStream) Recv() (model.Chunk, error) {
	if len(s.chunks) == 0 {
		return model.Chunk{}, io.EOF
	}
	c := s.chunks[0]
	s.chunks = s.chunks[1:]
	return c, nil
}

func (s *chunkStream) Close() error { return nil }

// fixedModel is a summariser model (summariser: model): it records each
// request and answers text, or fails with err, or waits for its context.
type fixedModel struct {
	text  string
	err   error
	block bool

	mu   sync.Mutex
	reqs []seenRequest
}

func (f *fixedModel) Stream(ctx context.Context, req *model.Request) (model.Stream, error) {
	s := seenRequest{Agent: req.Agent, Instance: req.InstanceKey, TurnID: req.TurnID, System: req.System, Turn: req.Turn, Step: req.Step}
	for i := range req.Messages.Len() {
		s.Messages = append(s.Messages, req.Messages.At(i))
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, s)
	f.mu.Unlock()
	switch {
	case f.block:
		<-ctx.Done()
		return nil, ctx.Err()
	case f.err != nil:
		return nil, f.err
	}
	return &chunkStream{chunks: []model.Chunk{{Kind: model.KindText, Text: f.text}}}, nil
}

func (f *fixedModel) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

// newWindowHarness is newHarness with the scripted model behind a
// windowModel, behind the recorder: the recorder sees every call, also
// those that fail.
func newWindowHarness(t *testing.T, cfg, script string, w *windowModel, opts ...runtime.Option) *harness {
	t.Helper()
	sc, err := scripted.Parse("script.yaml", []byte(script))
	if err != nil {
		t.Fatalf("ParseScript: %v", err)
	}
	w.p = sc
	rec := &recorder{p: w}
	h := newHarness(t, cfg, script, append([]runtime.Option{runtime.WithModel(rec)}, opts...)...)
	h.rec = rec
	return h
}

// turnCalls returns the requests of agent's turn turnID that are not
// summary requests, in order.
func turnCalls(rec *recorder, agent, turnID string) []seenRequest {
	var out []seenRequest
	for _, s := range rec.requests() {
		if s.Agent == agent && s.TurnID == turnID && s.System != summaryPrompt {
			out = append(out, s)
		}
	}
	return out
}

// summaryCalls returns agent's requests that asked for a summary.
func summaryCalls(rec *recorder, agent string) []seenRequest {
	var out []seenRequest
	for _, s := range rec.requests() {
		if s.Agent == agent && s.System == summaryPrompt {
			out = append(out, s)
		}
	}
	return out
}

// logErrs returns "message: err" of each record rec kept with an err
// attribute.
func logErrs(rec *logtest.Recorder) []string {
	var out []string
	for _, r := range rec.Records() {
		if err, ok := logtest.Attr(r, "err"); ok {
			out = append(out, r.Message+": "+err.String())
		}
	}
	return out
}

func mustEffective(t *testing.T, rt *runtime.Runtime, agent, key string) []pipeline.Message {
	t.Helper()
	msgs, err := rt.EffectiveHistory(context.Background(), agent, key)
	if err != nil {
		t.Fatalf("EffectiveHistory: %v", err)
	}
	return msgs
}

// fact is the n-th user message of the long conversations below, and
// noted the scripted answer to it.
func fact(n int) string {
	return fmt.Sprintf("fact %d: the quick brown fox jumps over the lazy dog number %d", n, n)
}
func noted(n int) string { return "Noted " + fact(n) }

// factTranscript is the transcript a summariser gets of the answers to
// facts from..to-1 and the facts from+1..to, as the condense extension
// renders it.
func factTranscript(from, to int) string {
	var b strings.Builder
	for n := from; n < to; n++ {
		fmt.Fprintf(&b, "assistant: %s\n\n", noted(n))
		fmt.Fprintf(&b, "user: %s\n\n", fact(n+1))
	}
	return b.String()
}

// condenseScript answers each fact with noted, and a summary request
// (whose input, the transcript, starts with a role) with a summary.
const condenseScript = `
agents:
  a:
    turns:
      - match: "^(user|assistant): "
        steps: [{text: "The user listed facts 1 to 7."}]
    fallback:
      steps: [{text: "Noted {{ .Input }}"}]
  scribe:
    fallback:
      steps: [{text: "The user listed facts 1 to 7."}]
`

// condenseModel is agent a's model: a 400-token window, 50 of them kept
// for the answer. With the 10 % buffer, the history is condensed past 310
// tokens: at the 8th fact.
const condenseModel = "model: {provider: scripted, script: script.yaml, context_window: 400, max_output_tokens: 50}"

func sendFacts(h *harness, from, to int) {
	h.t.Helper()
	for n := from; n <= to; n++ {
		h.mustSend("a", "k", fact(n))
	}
}
