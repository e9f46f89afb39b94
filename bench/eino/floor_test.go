package eino

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/schema"

	"github.com/ganglion-dev/ganglion/internal/benchturn"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/store"
)

// floorTurn is BenchmarkKeptFloor's turn: the plain loop, plus what
// Ganglion's turn keeps beyond it, each written the plainest way a
// redesign could hope for:
//
//   - three pass-through middlewares around the turn, each step and each
//     tool call, each a function that calls next;
//   - the instance's history kept across its turns, each message a new
//     pipeline.Message with a sequence number, an ID and a time;
//   - the tool's arguments checked (see lookupArgs);
//   - three commits to the in-memory store, as the runtime makes them: the
//     input with the reply that asks for a tool (before the tool runs), the
//     tool's result, and the answer with the instance's meta.
//
// It is not Ganglion: no events, no hooks, no token counting, no secrets,
// no streaming, no tool registry, one agent: how far a redesign of the
// runtime's turn, over the same store and types, could go.
type floorTurn struct {
	st   store.Store
	m    model.BaseChatModel
	mws  []floorLayer
	key  string
	meta store.Meta
	hist []*pipeline.Message
	put  []store.Record
	ids  []string // msg-0 … msg-1023, as the runtime keeps a table
	// Each level's call, reused, and the state its innermost function
	// works on.
	turn, step, tool floorCall
	answer           string
	done             bool
	tc               *pipeline.ToolCall
	res              string
	view             [3]schema.Message
	in               [3]*schema.Message
}

// A floorLayer is a middleware: it calls c.next to go on.
type floorLayer func(ctx context.Context, c *floorCall) error

// floorCall runs a level's layers, then fn.
type floorCall struct {
	f  *floorTurn
	i  int
	fn func(*floorTurn, context.Context) error
}

func (c *floorCall) next(ctx context.Context) error {
	if c.i == len(c.f.mws) {
		return c.fn(c.f, ctx)
	}
	c.i++
	return c.f.mws[c.i-1](ctx, c)
}

// through runs c's layers and fn.
func (c *floorCall) through(ctx context.Context) error {
	c.i = 0
	return c.next(ctx)
}

func newFloorTurn(st store.Store) *floorTurn {
	f := &floorTurn{st: st, m: fakeModel{}}
	pass := func(ctx context.Context, c *floorCall) error { return c.next(ctx) }
	f.mws = append(f.mws, pass, pass, pass)
	for i := range 1024 {
		f.ids = append(f.ids, "msg-"+strconv.Itoa(i))
	}
	f.turn = floorCall{f: f, fn: (*floorTurn).runTurn}
	f.step = floorCall{f: f, fn: (*floorTurn).runStep}
	f.tool = floorCall{f: f, fn: (*floorTurn).runTool}
	return f
}

// add appends a copy of m to the history and to the next commit.
func (f *floorTurn) add(m *pipeline.Message) *pipeline.Message {
	seq := f.meta.NextSeq
	f.meta.NextSeq++
	p := new(pipeline.Message)
	*p = *m
	p.ID, p.CreatedAt = f.ids[seq%uint64(len(f.ids))], time.Now()
	f.hist = append(f.hist, p)
	f.put = append(f.put, store.Record{Seq: seq, Message: p})
	return p
}

func (f *floorTurn) commit(ctx context.Context, meta bool) error {
	b := store.Batch{Put: f.put}
	if meta {
		f.meta.UpdatedAt = time.Now()
		b.Meta = &f.meta
	}
	err := f.st.Commit(ctx, benchturn.Agent, f.key, b)
	f.put = f.put[:0]
	return err
}

// lookupArgs checks args against lookup's schema as cheaply as it can: a
// syntax check and a look for the key, less than the runtime's own check
// (which also parses the object), so that the floor stays a floor.
func lookupArgs(args []byte) error {
	if !json.Valid(args) || !bytes.Contains(args, []byte(`"key"`)) {
		return fmt.Errorf("arguments %s: want one string, key", args)
	}
	return nil
}

// run runs a turn and returns its answer.
func (f *floorTurn) run(ctx context.Context, q string) (string, error) {
	f.meta.Turns++
	f.answer, f.done = "", false
	f.add(&pipeline.Message{Role: pipeline.RoleUser, Content: q, Source: pipeline.Source{Type: pipeline.SourceUser}})
	if err := f.turn.through(ctx); err != nil {
		return "", err
	}
	return f.answer, f.commit(ctx, true)
}

func (f *floorTurn) runTurn(ctx context.Context) error {
	for range 10 {
		if err := f.step.through(ctx); err != nil || f.done {
			return err
		}
	}
	return errors.New("too many steps")
}

func (f *floorTurn) runStep(ctx context.Context) error {
	// The model's view of the history: its last messages (all the fake
	// model reads), in reused values.
	in := f.in[:0]
	for i, m := range f.hist[max(0, len(f.hist)-len(f.view)):] {
		f.view[i] = schema.Message{Role: schema.RoleType(m.Role), Content: m.Content}
		in = append(in, &f.view[i])
	}
	out, err := f.m.Generate(ctx, in)
	if err != nil {
		return err
	}
	reply := pipeline.Message{Role: pipeline.RoleAssistant, Content: out.Content, Source: pipeline.Source{Type: pipeline.SourceModel}}
	if len(out.ToolCalls) > 0 {
		reply.ToolCalls = make([]pipeline.ToolCall, len(out.ToolCalls))
		for i, tc := range out.ToolCalls {
			reply.ToolCalls[i] = pipeline.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: []byte(tc.Function.Arguments)}
		}
	}
	stored := f.add(&reply)
	if len(stored.ToolCalls) == 0 {
		f.answer, f.done = stored.Content, true
		return nil
	}
	if err := f.commit(ctx, false); err != nil { // before any tool runs
		return err
	}
	for i := range stored.ToolCalls {
		f.tc = &stored.ToolCalls[i]
		if err := f.tool.through(ctx); err != nil {
			return err
		}
		f.add(&pipeline.Message{Role: pipeline.RoleTool, Content: f.res, ToolCallID: f.tc.ID, Name: f.tc.Name, Source: pipeline.Source{Type: pipeline.SourceTool}})
	}
	return f.commit(ctx, false)
}

func (f *floorTurn) runTool(ctx context.Context) error {
	if f.tc.Name != "lookup" {
		return errors.New("unknown tool " + f.tc.Name)
	}
	if err := lookupArgs(f.tc.Arguments); err != nil {
		return err
	}
	var err error
	f.res, err = lookupTool{}.InvokableRun(ctx, string(f.tc.Arguments))
	return err
}

// BenchmarkKeptFloor is the floor of BenchmarkGanglionTurn: floorTurn,
// with a new instance every benchturn.TurnsPerInstance turns and a new
// store every benchturn.TurnsPerRuntime, as benchturn.Run keeps its
// runtime's history.
func BenchmarkKeptFloor(b *testing.B) {
	ctx := context.Background()
	var f *floorTurn
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i%benchturn.TurnsPerRuntime == 0 {
			b.StopTimer()
			f = newFloorTurn(store.NewMemory())
			b.StartTimer()
		}
		if i%benchturn.TurnsPerInstance == 0 {
			f.key, f.meta, f.hist = "i"+strconv.Itoa(i), store.Meta{CreatedAt: time.Now()}, nil
		}
		i++
		answer, err := f.run(ctx, benchturn.Question)
		if err != nil {
			b.Fatal(err)
		}
		if answer != benchturn.Answer {
			b.Fatalf("answer = %q, want %q", answer, benchturn.Answer)
		}
	}
}

// TestKeptFloor checks that floorTurn does the work BenchmarkKeptFloor
// claims: every layer runs at each level, and the store holds each turn's
// four messages, in order, from three commits, with their IDs and times,
// and the meta.
func TestKeptFloor(t *testing.T) {
	ctx := context.Background()
	st := &countingStore{Store: store.NewMemory()}
	f := newFloorTurn(st)
	layers := 0
	counting := func(ctx context.Context, c *floorCall) error { layers++; return c.next(ctx) }
	f.mws = []floorLayer{counting, counting, counting}
	f.key = "floor"
	const turns = 3
	for range turns {
		answer, err := f.run(ctx, benchturn.Question)
		if err != nil || answer != benchturn.Answer {
			t.Fatalf("run = %q, %v; want %q", answer, err, benchturn.Answer)
		}
	}
	if want := turns * 3 * 4; layers != want { // turn, two steps, the tool call
		t.Errorf("layer calls = %d, want %d", layers, want)
	}
	if st.commits != 3*turns {
		t.Errorf("commits = %d, want %d", st.commits, 3*turns)
	}
	meta, recs, found, err := st.LoadInstance(ctx, benchturn.Agent, "floor")
	if err != nil || !found {
		t.Fatalf("LoadInstance = found %v, %v", found, err)
	}
	if meta.Turns != turns || meta.NextSeq != 4*turns || meta.UpdatedAt.IsZero() {
		t.Errorf("meta = %+v, want %d turns, next seq %d, a time", meta, turns, 4*turns)
	}
	roles := []pipeline.Role{pipeline.RoleUser, pipeline.RoleAssistant, pipeline.RoleTool, pipeline.RoleAssistant}
	if len(recs) != 4*turns {
		t.Fatalf("records = %d, want %d", len(recs), 4*turns)
	}
	for i, r := range recs {
		m := r.Message
		if r.Seq != uint64(i) || m.ID != "msg-"+strconv.Itoa(i) || m.CreatedAt.IsZero() || m.Role != roles[i%4] {
			t.Errorf("record %d = seq %d, %s %q at %v; want seq %d, msg-%d, %s with a time", i, r.Seq, m.Role, m.ID, m.CreatedAt, i, i, roles[i%4])
		}
	}
	if c := recs[2].Message; c.Content != "42" || c.ToolCallID != "call_1" {
		t.Errorf("tool result = %q for %q, want \"42\" for call_1", c.Content, c.ToolCallID)
	}
	if err := lookupArgs([]byte(`{"nokey": 1}`)); err == nil || !strings.Contains(err.Error(), "want one string, key") {
		t.Errorf("lookupArgs of a wrong object = %v", err)
	}
}

// countingStore counts the commits made to its Store.
type countingStore struct {
	store.Store
	commits int
}

func (s *countingStore) Commit(ctx context.Context, agent, key string, b store.Batch) error {
	s.commits++
	return s.Store.Commit(ctx, agent, key, b)
}
