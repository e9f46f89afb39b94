package openai

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/ganglion-dev/ganglion/internal/secret"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// The stream: server-sent events decoded into chunks, tool calls assembled
// and numbered.

// errClosed is what Recv returns after Close.
var errClosed = errors.New("openai: stream closed")

// stream decodes the server-sent events of one answer into chunks.
type stream struct {
	ctx      context.Context
	body     io.Closer
	dec      ssestream.Decoder
	red      *secret.Redactor // masks the key in errors
	idPrefix string           // of generated call IDs; "" for random ones

	closed    atomic.Bool
	closeOnce sync.Once

	queue []model.Chunk // decoded, not yet received
	head  int           // next chunk of queue
	done  bool          // no more events: queue is the rest

	p        parser
	ev       wireEvent
	calls    []toolCall // in the order they were seen
	finished bool       // the choice has a finish_reason
	usage    pipeline.Usage
	hasUsage bool
}

// toolCall is the state of one call being streamed.
type toolCall struct {
	index   int64
	wireID  string // the ID the server gave, if any
	id      string // the ID chunks carry
	name    string
	pending string // arguments received before the name
	started bool
	ended   bool
}

// Recv returns the next chunk, io.EOF after the last one, ctx's error once
// the call's context is done, and an error after Close.
func (s *stream) Recv() (model.Chunk, error) {
	if s.closed.Load() {
		return model.Chunk{}, errClosed
	}
	if err := s.ctx.Err(); err != nil {
		return model.Chunk{}, err
	}
	for s.head >= len(s.queue) {
		if s.done {
			return model.Chunk{}, io.EOF
		}
		s.queue, s.head = s.queue[:0], 0
		if err := s.advance(); err != nil {
			return model.Chunk{}, err
		}
	}
	c := s.queue[s.head]
	s.queue[s.head] = model.Chunk{}
	s.head++
	return c, nil
}

// Close releases the response; it is idempotent.
func (s *stream) Close() error {
	s.closed.Store(true)
	s.release()
	return nil
}

func (s *stream) release() {
	s.closeOnce.Do(func() { s.body.Close() })
}

// advance reads one event and queues its chunks, or ends the stream. It
// returns an error only when the context is done.
func (s *stream) advance() error {
	if !s.dec.Next() {
		err := s.dec.Err()
		if cerr := s.ctx.Err(); cerr != nil {
			s.done = true
			s.release()
			return cerr
		}
		switch {
		case s.finished:
			// The answer is whole; a connection cut after it loses at
			// most the usage.
			s.end()
		case err != nil:
			s.fail(networkError("stream interrupted", err, s.red))
		default:
			s.fail(&model.Error{Kind: model.ErrorTransient, Provider: providerName, Message: "the stream ended before the answer was complete"})
		}
		return nil
	}
	e := s.dec.Event()
	data := bytes.TrimSpace(e.Data)
	if len(data) == 0 {
		return nil
	}
	if bytes.HasPrefix(data, []byte("[DONE]")) {
		s.end()
		return nil
	}
	ev := &s.ev
	ev.reset()
	s.p.reset(data)
	if e.Type == "error" {
		// An SSE error event: its data is {"error":{...}}, the error
		// object itself, or text.
		s.p.errorBody(&ev.err)
		if s.p.err != nil || !ev.err.present {
			ev.err = wireError{present: true, message: string(data)}
		}
		s.fail(&model.Error{Kind: ev.err.kind(), Provider: providerName, Status: int(ev.err.status), Message: clean(ev.err.text(), s.red)})
		return nil
	}
	s.p.event(ev)
	if s.p.err != nil {
		s.fail(&model.Error{Kind: model.ErrorOther, Provider: providerName, Message: "malformed stream event: " + s.p.err.Error()})
		return nil
	}
	if ev.err.present {
		s.fail(&model.Error{Kind: ev.err.kind(), Provider: providerName, Status: int(ev.err.status), Message: clean(ev.err.text(), s.red)})
		return nil
	}
	if ev.hasUsage {
		s.usage = ev.usage.usage()
		s.hasUsage = true
	}
	if ev.reasoning != "" {
		s.queue = append(s.queue, model.Chunk{Kind: model.KindReasoning, Text: ev.reasoning})
	} else if ev.reasoningAlt != "" {
		s.queue = append(s.queue, model.Chunk{Kind: model.KindReasoning, Text: ev.reasoningAlt})
	}
	if ev.content != "" {
		s.queue = append(s.queue, model.Chunk{Kind: model.KindText, Text: ev.content})
	}
	if ev.refusal != "" {
		s.queue = append(s.queue, model.Chunk{Kind: model.KindText, Text: ev.refusal})
	}
	for i := range ev.calls {
		s.callDelta(&ev.calls[i])
	}
	if ev.finish != "" {
		s.finished = true
		s.endCalls()
		if ev.finish == "error" {
			s.fail(&model.Error{Kind: model.ErrorTransient, Provider: providerName, Message: "the server ended the answer with an error"})
		}
	}
	return nil
}

// callDelta queues the chunks of one tool call delta.
func (s *stream) callDelta(d *callDelta) {
	c := s.callFor(d)
	if c.ended {
		return
	}
	if c.wireID == "" && d.id != "" {
		c.wireID = d.id
	}
	if c.name == "" && d.name != "" {
		c.name = d.name
	}
	if c.started {
		if d.args != "" {
			s.queue = append(s.queue, model.Chunk{Kind: model.KindToolCallDelta, ToolCallID: c.id, ArgumentsDelta: d.args})
		}
		return
	}
	if c.name == "" {
		c.pending += d.args
		return
	}
	s.start(c)
	if d.args != "" {
		s.queue = append(s.queue, model.Chunk{Kind: model.KindToolCallDelta, ToolCallID: c.id, ArgumentsDelta: d.args})
	}
}

// callFor finds the call a delta continues, or opens a new one.
func (s *stream) callFor(d *callDelta) *toolCall {
	if d.hasIndex {
		for i := range s.calls {
			if s.calls[i].index == d.index {
				return &s.calls[i]
			}
		}
		return s.newCall(d.index)
	}
	// A server that sends no index (Gemini's compatibility layer sends
	// whole calls): a new ID is a new call, no ID continues the last one.
	if d.id != "" {
		for i := range s.calls {
			if s.calls[i].wireID == d.id {
				return &s.calls[i]
			}
		}
	} else if len(s.calls) > 0 {
		return &s.calls[len(s.calls)-1]
	}
	next := int64(0)
	for _, c := range s.calls {
		next = max(next, c.index+1)
	}
	return s.newCall(next)
}

func (s *stream) newCall(index int64) *toolCall {
	s.calls = append(s.calls, toolCall{index: index})
	return &s.calls[len(s.calls)-1]
}

// start opens c, giving it an ID if the server gave none.
func (s *stream) start(c *toolCall) {
	c.started = true
	c.id = c.wireID
	if c.id == "" {
		n := 1
		for i := range s.calls {
			if &s.calls[i] == c {
				n = i + 1
			}
		}
		c.id = s.generateID(n)
	}
	s.queue = append(s.queue, model.Chunk{Kind: model.KindToolCallStart, ToolCallID: c.id, ToolName: c.name})
	if c.pending != "" {
		s.queue = append(s.queue, model.Chunk{Kind: model.KindToolCallDelta, ToolCallID: c.id, ArgumentsDelta: c.pending})
		c.pending = ""
	}
}

func (s *stream) generateID(n int) string {
	if s.idPrefix != "" {
		return s.idPrefix + strconv.Itoa(n)
	}
	var b [12]byte
	rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}

// endCalls closes the open calls, opening first any that never got a name.
func (s *stream) endCalls() {
	for i := range s.calls {
		c := &s.calls[i]
		if c.ended {
			continue
		}
		if !c.started {
			s.start(c)
		}
		c.ended = true
		s.queue = append(s.queue, model.Chunk{Kind: model.KindToolCallEnd, ToolCallID: c.id})
	}
}

// end ends the stream normally.
func (s *stream) end() {
	s.endCalls()
	if s.hasUsage {
		s.queue = append(s.queue, model.Chunk{Kind: model.KindUsage, Usage: s.usage})
	}
	s.done = true
	s.release()
}

// fail ends the stream with an error chunk, after the usage if any.
func (s *stream) fail(err *model.Error) {
	if s.hasUsage {
		s.queue = append(s.queue, model.Chunk{Kind: model.KindUsage, Usage: s.usage})
	}
	s.queue = append(s.queue, model.Chunk{Kind: model.KindError, Err: err})
	s.done = true
	s.release()
}
