package cassette

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/internal/secret"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/tape"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// Recorder writes a cassette as a session runs. It is a [Tape]: give it
// to runtime.WithTape, run the session, close the runtime, then close the
// recorder. It is safe for concurrent use.
//
// A failure to write does not fail the session: the recorder stops
// writing, and [Recorder.Close] returns the error.
type Recorder struct{ r recorder }

// recorder is a Recorder's tape.
type recorder struct {
	mu     sync.Mutex
	w      *bufio.Writer
	closer io.Closer
	err    error
	closed bool

	clockNS   []int64   // clock readings not written yet
	lastClock time.Time // the reading before them

	calls   int                 // model calls opened
	prev    map[string]*sentReq // the last request of each conversation
	idUses  map[string]int
	secrets map[string]string
	mask    *secret.Redactor
	mcp     map[string]string // each MCP server's listing, as last written
}

// sentReq is what a conversation's last model call sent.
type sentReq struct {
	msgs  []message
	tools []toolSpec
}

// Create creates (or truncates) the file at path and returns a recorder
// writing to it; Close closes the file.
func Create(path string) (*Recorder, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	r := NewRecorder(f)
	r.r.closer = f
	return r, nil
}

// NewRecorder returns a recorder writing to w. It writes the header at
// once, with the current time as the cassette's start.
func NewRecorder(w io.Writer) *Recorder {
	rec := &Recorder{r: recorder{w: bufio.NewWriterSize(w, 64<<10), prev: map[string]*sentReq{}, idUses: map[string]int{},
		secrets: map[string]string{}}}
	r := &rec.r
	r.lastClock = time.Now().UTC()
	r.writeLocked(header{K: kindHeader, Version: version, Start: r.lastClock})
	return rec
}

// Close writes what is buffered, closes the file of [Create], and returns
// the first error the recorder met. Later calls record nothing.
func (rec *Recorder) Close() error {
	r := &rec.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return r.err
	}
	r.closed = true
	r.flushClockLocked()
	if err := r.w.Flush(); err != nil && r.err == nil {
		r.err = err
	}
	if r.closer != nil {
		if err := r.closer.Close(); err != nil && r.err == nil {
			r.err = err
		}
	}
	if r.err != nil {
		return fmt.Errorf("cassette: %w", r.err)
	}
	return nil
}

// writeLocked writes v as a line, after the clock readings made before it.
func (r *recorder) writeLocked(v any) {
	if r.closed || r.err != nil {
		return
	}
	if _, clock := v.(clockLine); !clock {
		r.flushClockLocked()
	}
	b, err := marshal(v)
	if err != nil {
		r.err = err
		return
	}
	if r.mask != nil { // no secret provided yet: nothing to mask
		b = []byte(r.mask.Redact(string(b)))
	}
	if _, err := r.w.Write(b); err != nil {
		r.err = err
	} else if err := r.w.WriteByte('\n'); err != nil {
		r.err = err
	}
}

func (r *recorder) flushClockLocked() {
	if len(r.clockNS) == 0 {
		return
	}
	ns := r.clockNS
	r.clockNS = nil
	r.writeLocked(clockLine{K: kindClock, NS: ns})
}

// marshal is json.Marshal without the HTML escapes, which would make
// cassettes harder to read.
func marshal(v any) ([]byte, error) {
	var b jsonBuffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.bytes[:len(b.bytes)-1], nil // without Encode's newline
}

type jsonBuffer struct{ bytes []byte }

func (b *jsonBuffer) Write(p []byte) (int, error) {
	b.bytes = append(b.bytes, p...)
	return len(p), nil
}

// Clock returns now, recording each reading. The readings are in UTC and
// without their monotonic part, as a replay gives them back.
func (r *recorder) Clock(now func() time.Time) func() time.Time {
	return func() time.Time {
		t := now().Round(0).UTC()
		r.mu.Lock()
		r.clockNS = append(r.clockNS, int64(t.Sub(r.lastClock)))
		r.lastClock = t
		r.mu.Unlock()
		return t
	}
}

// ID returns fresh() and records it under key.
func (r *recorder) ID(key string, fresh func() string) string {
	id := fresh()
	r.mu.Lock()
	r.idUses[key]++
	r.writeLocked(idLine{K: kindID, Key: occurrence(key, r.idUses[key]), ID: id})
	r.mu.Unlock()
	return id
}

// Input records in. A provided secret is masked, here and in every line
// written after it.
func (r *recorder) Input(ti tape.Input) {
	in := Input(ti)
	r.mu.Lock()
	defer r.mu.Unlock()
	if in.Secret {
		if in.Text != "" {
			r.secrets["provided "+strconv.Itoa(len(r.secrets)+1)] = in.Text
			r.mask = secret.NewRedactor(r.secrets)
		}
		in.Text = "[secret]"
	}
	r.writeLocked(inputLine{K: kindInput, Input: in})
}

// Event records ev, but for streamed model deltas: the chunks hold those.
func (r *recorder) Event(ev events.Event) {
	if ev.Topic == events.ModelDelta {
		return
	}
	l := eventLine{K: kindEvent, Topic: ev.Topic, Agent: ev.Agent, Instance: ev.Instance, TurnID: ev.TurnID, Source: ev.Source}
	var err error
	if ev.Data != nil {
		l.Data, err = marshal(ev.Data)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		l.Data, _ = marshal(map[string]string{"unrecordable": err.Error()})
	}
	r.writeLocked(l)
}

// Tool runs the call and records its result, masked.
func (r *recorder) Tool(ctx context.Context, c tape.Call) (*pipeline.ToolResult, error) {
	start := time.Now()
	res, err := c.Run(ctx)
	l := toolLine{K: kindTool, Agent: c.Agent, Instance: c.Instance, TurnID: c.TurnID, Step: c.Step, CallID: c.Call.ID, Name: c.Call.Name,
		Arguments: string(c.Call.Arguments), MS: time.Since(start).Milliseconds()}
	l.setResult(res, err, c.Mask)
	r.mu.Lock()
	r.writeLocked(l)
	r.mu.Unlock()
	return res, err
}

// MCPTools lists the server's tools and records the listing when it
// changed since the last.
func (r *recorder) MCPTools(name string, list func() ([]byte, error)) ([]byte, error) {
	b, err := list()
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mcp == nil {
		r.mcp = map[string]string{}
	}
	if r.mcp[name] != string(b) {
		r.mcp[name] = string(b)
		r.writeLocked(mcpLine{K: kindMCP, Server: name, Tools: b})
	}
	return b, nil
}

// Provider opens the provider and records each call to it.
func (r *recorder) Provider(label string, open func() (model.Provider, error)) (model.Provider, error) {
	p, err := open()
	if err != nil {
		return nil, err
	}
	return &recordingProvider{r: r, label: label, p: p}, nil
}

type recordingProvider struct {
	r     *recorder
	label string
	p     model.Provider
}

func (rp *recordingProvider) Stream(ctx context.Context, req *model.Request) (model.Stream, error) {
	// The request's messages are a view that lives as long as the call:
	// take them now.
	msgs := make([]message, req.Messages.Len())
	for i := range msgs {
		msgs[i] = wireMessage(req.Messages.At(i))
	}
	r := rp.r
	r.mu.Lock()
	r.calls++
	n := r.calls
	r.mu.Unlock()
	rs := &recordingStream{r: r, start: time.Now(), line: modelLine{K: kindModel, Call: n, Model: rp.label, Agent: req.Agent,
		Instance: req.InstanceKey, TurnID: req.TurnID, Step: req.Step, ModelName: req.Model, System: req.System,
		MaxOutputTokens: req.MaxOutputTokens}, msgs: msgs, tools: wireTools(req.Tools)}
	s, err := rp.p.Stream(ctx, req)
	if err != nil {
		rs.line.OpenError = toWireError(err)
		rs.finish()
		return nil, err
	}
	rs.s = s
	return rs, nil
}

type recordingStream struct {
	r      *recorder
	s      model.Stream
	start  time.Time
	line   modelLine
	msgs   []message
	tools  []toolSpec
	chunks []chunkLine
	done   bool
}

func (rs *recordingStream) Recv() (model.Chunk, error) {
	c, err := rs.s.Recv()
	switch {
	case err == io.EOF:
		rs.finish()
	case err != nil:
		rs.add(chunkLine{Kind: model.KindError.String(), Error: toWireError(err)})
		rs.finish()
	default:
		l := chunkLine{Kind: c.Kind.String(), Text: c.Text, ToolCallID: c.ToolCallID, ToolName: c.ToolName, Arguments: c.ArgumentsDelta}
		switch c.Kind {
		case model.KindUsage:
			u := c.Usage
			l.Usage = &u
		case model.KindError:
			if c.Err != nil {
				l.Error = toWireError(c.Err)
			} else {
				l.Error = &wireError{Message: "model error"}
			}
		}
		rs.add(l)
	}
	return c, err
}

func (rs *recordingStream) add(l chunkLine) {
	l.K, l.Call, l.MS = kindChunk, rs.line.Call, time.Since(rs.start).Milliseconds()
	rs.chunks = append(rs.chunks, l)
}

func (rs *recordingStream) Close() error {
	rs.finish()
	return rs.s.Close()
}

// finish writes the call, once: when its stream ended or was closed.
func (rs *recordingStream) finish() {
	if rs.done {
		return
	}
	rs.done = true
	r := rs.r
	r.mu.Lock()
	defer r.mu.Unlock()
	key := conversation(rs.line.Model, rs.line.Agent, rs.line.Instance)
	l := rs.line
	l.Messages, l.Tools = rs.msgs, rs.tools
	if p := r.prev[key]; p != nil {
		l.Same = commonPrefix(p.msgs, rs.msgs)
		l.Messages = rs.msgs[l.Same:]
		if sameTools(p.tools, rs.tools) {
			l.Tools = nil
		}
	}
	if l.Messages == nil {
		l.Messages = []message{}
	}
	r.prev[key] = &sentReq{msgs: rs.msgs, tools: rs.tools}
	r.writeLocked(l)
	for _, c := range rs.chunks {
		r.writeLocked(c)
	}
}

func commonPrefix(a, b []message) int {
	n := 0
	for n < len(a) && n < len(b) && equalMessage(a[n], b[n]) {
		n++
	}
	return n
}

func equalMessage(a, b message) bool {
	if a.Role != b.Role || a.Content != b.Content || a.Reasoning != b.Reasoning || a.ToolCallID != b.ToolCallID ||
		a.Name != b.Name || a.IsError != b.IsError || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i := range a.ToolCalls {
		if a.ToolCalls[i] != b.ToolCalls[i] {
			return false
		}
	}
	return true
}

func sameTools(a, b []toolSpec) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Description != b[i].Description || a[i].Category != b[i].Category ||
			string(a[i].Parameters) != string(b[i].Parameters) {
			return false
		}
	}
	return true
}
