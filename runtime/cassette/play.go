package cassette

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/tape"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// Player replays a [Cassette]. It is a [Tape]: give it to
// runtime.WithTape, with the config the session ran with (or the one
// under test), and issue the cassette's [Cassette.Inputs] to the runtime
// (package cassettetest does that). It is safe for concurrent use.
//
// By default the first divergence stops the replay: the model call that
// differs from the recording, and every model call after it, fails with
// the [*Divergence]. With [Lenient] the replay goes on with the recorded
// answers. Either way [Player.Divergences] lists what diverged.
type Player struct{ p player }

// player is a Player's tape.
type player struct {
	c       *Cassette
	lenient bool

	mu       sync.Mutex
	calls    map[string][]*call // by callKey, in recorded order
	used     map[string]int     // calls of each key played
	tools    map[string][]*toolLine
	toolUsed map[string]int
	ids      map[string]string
	idUses   map[string]int
	clock    int // readings played
	div      []*Divergence
}

// PlayOption configures a [Player].
type PlayOption func(*player)

// Lenient makes a player go on after a divergence, with the recorded
// answer, and keep every divergence.
func Lenient() PlayOption { return func(p *player) { p.lenient = true } }

// NewPlayer returns a player of c.
func NewPlayer(c *Cassette, opts ...PlayOption) *Player {
	pl := &Player{p: player{c: c, calls: map[string][]*call{}, used: map[string]int{}, tools: map[string][]*toolLine{},
		toolUsed: map[string]int{}, ids: map[string]string{}, idUses: map[string]int{}}}
	p := &pl.p
	for _, o := range opts {
		o(p)
	}
	for _, cl := range c.calls {
		l := cl.line
		k := callKey(l.Model, l.Agent, l.Instance, l.TurnID, l.Step)
		p.calls[k] = append(p.calls[k], cl)
	}
	for i := range c.tools {
		l := &c.tools[i]
		k := toolKey(l.Agent, l.Instance, l.TurnID, l.Step, l.CallID)
		p.tools[k] = append(p.tools[k], l)
	}
	for _, l := range c.ids {
		p.ids[l.Key] = l.ID
	}
	return pl
}

// Divergences returns what differed from the recording so far, in the
// order it was found.
func (pl *Player) Divergences() []*Divergence {
	p := &pl.p
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*Divergence(nil), p.div...)
}

// diverged keeps d and returns the error a strict replay stops with: d,
// or the first divergence.
func (p *player) diverged(d *Divergence) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.div = append(p.div, d)
	return p.div[0]
}

// stopped returns the divergence a strict replay stopped at, if any.
func (p *player) stopped() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lenient || len(p.div) == 0 {
		return nil
	}
	return p.div[0]
}

// Clock returns the recorded clock, reading by reading; past the end of
// the recording it moves on a microsecond a reading.
func (p *player) Clock(func() time.Time) func() time.Time {
	return func() time.Time {
		p.mu.Lock()
		defer p.mu.Unlock()
		n := p.clock
		p.clock++
		if n < len(p.c.clock) {
			return p.c.clock[n]
		}
		last := p.c.start
		if len(p.c.clock) > 0 {
			last = p.c.clock[len(p.c.clock)-1]
		}
		return last.Add(time.Duration(n-len(p.c.clock)+1) * time.Microsecond)
	}
}

// ID returns the ID recorded for key, or fresh() for a key the recording
// never used.
func (p *player) ID(key string, fresh func() string) string {
	p.mu.Lock()
	p.idUses[key]++
	id, ok := p.ids[occurrence(key, p.idUses[key])]
	p.mu.Unlock()
	if ok {
		return id
	}
	return fresh()
}

// MCPTools returns the server's recorded listing, without the server:
// the last the recording holds (a listing that changed during the
// session replays as it ended).
func (p *player) MCPTools(name string, _ func() ([]byte, error)) ([]byte, error) {
	if b, ok := p.c.mcp[name]; ok {
		return b, nil
	}
	d := &Divergence{What: "the tools of MCP server " + strconv.Quote(name), Diffs: []string{"not in the recording"}}
	p.diverged(d)
	return nil, d
}

// Input does nothing: the inputs are what the replay issues.
func (p *player) Input(tape.Input) {}

// Event does nothing: the replay's events are its own.
func (p *player) Event(events.Event) {}

// Tool answers a call of a tool that acts on the world from the
// recording; it runs a live tool and compares its result with the
// recorded one.
func (p *player) Tool(ctx context.Context, c tape.Call) (*pipeline.ToolResult, error) {
	k := toolKey(c.Agent, c.Instance, c.TurnID, c.Step, c.Call.ID)
	p.mu.Lock()
	var rec *toolLine
	if n := p.toolUsed[k]; n < len(p.tools[k]) {
		rec = p.tools[k][n]
		p.toolUsed[k] = n + 1
	}
	p.mu.Unlock()
	what := "tool call " + strconv.Quote(c.Call.ID) + " (" + c.Call.Name + ") of " + where("", c.Agent, c.Instance, c.TurnID, c.Step)
	if rec == nil {
		err := p.diverged(&Divergence{What: what, Diffs: []string{"not in the recording"}})
		if c.Live {
			return c.Run(ctx)
		}
		return nil, err
	}
	var diffs []string
	if rec.Name != c.Call.Name {
		diffs = append(diffs, fieldDiff("name", rec.Name, c.Call.Name)...)
	}
	if a, b := string(compactJSON([]byte(rec.Arguments))), string(compactJSON(c.Call.Arguments)); a != b {
		diffs = append(diffs, fieldDiff("arguments", rec.Arguments, string(c.Call.Arguments))...)
	}
	var res *pipeline.ToolResult
	var err error
	if c.Live {
		res, err = c.Run(ctx)
		diffs = append(diffs, resultDiffs(rec, res, err, c.Mask)...)
	} else {
		res, err = recordedResult(rec, c.Call)
	}
	if len(diffs) > 0 {
		p.diverged(&Divergence{What: what, Diffs: diffs})
	}
	return res, err
}

func recordedResult(rec *toolLine, c pipeline.ToolCall) (*pipeline.ToolResult, error) {
	switch {
	case rec.Error != "":
		return nil, errors.New(rec.Error)
	case rec.NoResult:
		return nil, nil
	}
	return &pipeline.ToolResult{CallID: c.ID, Name: c.Name, Content: rec.Content, IsError: rec.IsError}, nil
}

func resultDiffs(rec *toolLine, res *pipeline.ToolResult, err error, mask func(string) string) []string {
	var now toolLine
	now.setResult(res, err, mask)
	var d []string
	if rec.Error != now.Error {
		d = append(d, fieldDiff("error", rec.Error, now.Error)...)
	}
	if rec.NoResult != now.NoResult {
		d = append(d, fieldDiff("no result", strconv.FormatBool(rec.NoResult), strconv.FormatBool(now.NoResult))...)
	}
	if rec.Content != now.Content {
		d = append(d, fieldDiff("result", rec.Content, now.Content)...)
	}
	if rec.IsError != now.IsError {
		d = append(d, fieldDiff("is_error", strconv.FormatBool(rec.IsError), strconv.FormatBool(now.IsError))...)
	}
	return d
}

// Provider returns the recorded model named label; open is not called.
func (p *player) Provider(label string, _ func() (model.Provider, error)) (model.Provider, error) {
	return &playingProvider{p: p, label: label}, nil
}

type playingProvider struct {
	p     *player
	label string
}

func (pp *playingProvider) Stream(ctx context.Context, req *model.Request) (model.Stream, error) {
	p := pp.p
	if err := p.stopped(); err != nil {
		return nil, err
	}
	k := callKey(pp.label, req.Agent, req.InstanceKey, req.TurnID, req.Step)
	p.mu.Lock()
	n := p.used[k]
	var rec *call
	if n < len(p.calls[k]) {
		rec = p.calls[k][n]
		p.used[k] = n + 1
	}
	p.mu.Unlock()
	what := "model call of " + where(pp.label, req.Agent, req.InstanceKey, req.TurnID, req.Step)
	if rec == nil {
		d := &Divergence{What: what, Diffs: []string{"not in the recording: it has " + strconv.Itoa(n) + " such calls"}}
		p.diverged(d)
		return nil, d
	}
	what = "model call " + strconv.Itoa(rec.line.Call) + " (" + what[len("model call of "):] + ")"
	if diffs := requestDiffs(rec, req); len(diffs) > 0 {
		if err := p.diverged(&Divergence{What: what, Diffs: diffs}); !p.lenient {
			return nil, err
		}
	}
	if rec.line.OpenError != nil {
		return nil, rec.line.OpenError.err()
	}
	return &playingStream{ctx: ctx, chunks: rec.chunks}, nil
}

type playingStream struct {
	ctx    context.Context
	chunks []chunkLine
	next   int
}

func (s *playingStream) Recv() (model.Chunk, error) {
	if err := s.ctx.Err(); err != nil {
		return model.Chunk{}, err
	}
	if s.next == len(s.chunks) {
		return model.Chunk{}, io.EOF
	}
	l := &s.chunks[s.next]
	s.next++
	k, _ := chunkKind(l.Kind) // Read checked it
	c := model.Chunk{Kind: k, Text: l.Text, ToolCallID: l.ToolCallID, ToolName: l.ToolName, ArgumentsDelta: l.Arguments}
	if l.Usage != nil {
		c.Usage = *l.Usage
	}
	if l.Error != nil {
		c.Err = l.Error.err()
	}
	return c, nil
}

func (s *playingStream) Close() error { return nil }
