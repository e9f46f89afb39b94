package condense

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
)

// These tests drive the extension through the public API alone, against a
// fake window: what the runtime does with Condense and Reduce is tested in
// the runtime (runtime/condense_test.go).

// yamlConfig is an extensions.Config decoding YAML text strictly.
type yamlConfig string

func (c yamlConfig) Decode(v any) error {
	return yaml.UnmarshalWithOptions([]byte(c), v, yaml.DisallowUnknownField())
}

// fakeWindow is a window of msgs that records what the extension asks.
type fakeWindow struct {
	size, reserved int
	msgs           []pipeline.WindowMessage
	tokens         int // Tokens()
	sent           int // Sent()
	condensed      [][]string
	summaries      []pipeline.Message
	reduced        []string // reasons
	completions    []pipeline.CompletionRequest
	answer         string
	answerErr      error
	onNext         func() // runs inside Next: a reduction by the runtime
}

func (w *fakeWindow) Size() int                                   { return w.size }
func (w *fakeWindow) ReservedOutput() int                         { return w.reserved }
func (w *fakeWindow) Messages() ([]pipeline.WindowMessage, error) { return slices.Clone(w.msgs), nil }
func (w *fakeWindow) Tokens() int                                 { return w.tokens }
func (w *fakeWindow) Sent() int                                   { return w.sent }
func (w *fakeWindow) Truncate([]string, string) error {
	return errors.New("the extension does not truncate chosen messages")
}

func (w *fakeWindow) Reduce(keep float64, reason string) (int, int, error) {
	w.reduced = append(w.reduced, fmt.Sprintf("%s %.2f", reason, keep))
	w.tokens /= 2
	return len(w.msgs), len(w.msgs) / 2, nil
}

func (w *fakeWindow) Condense(ids []string, summary pipeline.Message) (string, error) {
	w.condensed = append(w.condensed, ids)
	w.summaries = append(w.summaries, summary)
	w.tokens /= 4
	return "sum-1", nil
}

func (w *fakeWindow) Complete(_ context.Context, req pipeline.CompletionRequest) (pipeline.Completion, error) {
	w.completions = append(w.completions, req)
	return pipeline.Completion{Text: w.answer}, w.answerErr
}

// msgs builds window messages from a compact form: "u" user, "a" assistant,
// "c" an assistant tool call whose result "r" follows in the same unit,
// "s" a summary; an upper-case letter marks a message that must stay.
func msgs(spec string) []pipeline.WindowMessage {
	var out []pipeline.WindowMessage
	unit := -1
	for i, r := range spec {
		keep := r >= 'A' && r <= 'Z'
		kind := strings.ToLower(string(r))
		m := pipeline.WindowMessage{Message: pipeline.Message{ID: fmt.Sprintf("m%d", i), Content: fmt.Sprintf("text %d", i)}, Tokens: 10, Keep: keep}
		switch kind {
		case "u", "s":
			m.Message.Role = pipeline.RoleUser
			m.Summary = kind == "s"
		case "a", "c":
			m.Message.Role = pipeline.RoleAssistant
			if kind == "c" {
				m.Message.ToolCalls = []pipeline.ToolCall{{ID: fmt.Sprintf("call%d", i), Name: "read_file", Arguments: []byte(`{}`)}}
			}
		case "r":
			m.Message.Role, m.Message.Name = pipeline.RoleTool, "read_file"
		}
		if kind != "r" {
			unit++
		}
		m.Unit = unit
		if keep { // a unit stays or goes whole
			for j := range out {
				if out[j].Unit == unit {
					out[j].Keep = true
				}
			}
		} else if len(out) > 0 && out[len(out)-1].Unit == unit && out[len(out)-1].Keep {
			m.Keep = true
		}
		out = append(out, m)
	}
	return out
}

// rig loads the extension with settings and runs steps on w.
type rig struct {
	c    *condenser
	p    *pipeline.Pipeline
	w    *fakeWindow
	bus  *events.Bus
	evs  []events.Event
	next func() *pipeline.StepResult
}

func newRig(t *testing.T, settings string, w *fakeWindow, agents ...string) *rig {
	t.Helper()
	ext, err := New(yamlConfig(settings))
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{c: ext.(*condenser), w: w, bus: events.NewBus()}
	r.bus.Subscribe(events.ContextCondensed, func(ev events.Event) { r.evs = append(r.evs, ev) })
	var b pipeline.Builder
	api := extensions.NewAPI(Name, extensions.Host{Agent: "a", Builder: &b, Bus: r.bus, AgentNames: agents,
		OpenModel: func(key string) (string, error) { return "condense." + key, nil }})
	if err := ext.Register(api); err != nil {
		t.Fatal(err)
	}
	r.p, err = b.Build(pipeline.Handlers{
		Turn: func(context.Context, *pipeline.TurnContext) (*pipeline.TurnResult, error) { return nil, nil },
		Step: func(context.Context, *pipeline.StepContext) (*pipeline.StepResult, error) {
			if w.onNext != nil {
				w.onNext()
			}
			if r.next != nil {
				return r.next(), nil
			}
			return &pipeline.StepResult{}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) step(t *testing.T) {
	t.Helper()
	tc := pipeline.NewTurnContext(pipeline.TurnInfo{Agent: "a", InstanceKey: "k", TurnID: "turn-3", Window: r.w, Models: r.w})
	if _, err := r.p.RunStep(context.Background(), pipeline.NewStepContext(tc, 1, nil)); err != nil {
		t.Fatal(err)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct{ config, want string }{
		{`{summariser: oracle}`, `summariser must be self, model or agent, got "oracle"`},
		{`{summariser: agent}`, `summariser "agent" needs agent: the agent that writes summaries`},
		{`{summariser: model}`, `summariser "model" needs model: {provider: ..., name: ...}`},
		{`{summariser: model, model: {name: x}}`, `summariser "model" needs model: {provider: ..., name: ...}`},
		{`{context_window: -1}`, `context_window must not be negative, got -1`},
		{`{buffer: 1}`, `buffer must be a share from 0 to below 1, got 1`},
		{`{min_messages: -1}`, `min_messages must not be negative, got -1`},
		{`{keep: 0}`, `keep must be a share above 0 and below 1, got 0`},
		{`{keep_recent: -1}`, `keep_recent must not be negative, got -1`},
		{`{timeout: soon}`, `timeout must be a positive duration such as 30s, got "soon"`},
		{`{colour: blue}`, `unknown field "colour"`},
	}
	for _, tt := range tests {
		t.Run(tt.config, func(t *testing.T) {
			_, err := New(yamlConfig(tt.config))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New(%s) = %v, want an error containing %q", tt.config, err, tt.want)
			}
		})
	}
}

func TestRegisterErrors(t *testing.T) {
	tests := []struct {
		name, config string
		host         extensions.Host
		want         string
	}{
		{"unknown agent", `{summariser: agent, agent: ghost}`, extensions.Host{AgentNames: []string{"scribe", "a"}},
			`summariser agent: unknown agent "ghost" (agents: scribe, a)`},
		{"model refused", `{summariser: model, model: {provider: nope}}`,
			extensions.Host{OpenModel: func(string) (string, error) { return "", errors.New(`unknown provider "nope"`) }},
			`summariser model: unknown provider "nope"`},
		{"no models", `{summariser: model, model: {provider: x}}`, extensions.Host{},
			`summariser model: extension "condense": open model: this runtime opens no models for extensions`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ext, err := New(yamlConfig(tt.config))
			if err != nil {
				t.Fatal(err)
			}
			var b pipeline.Builder
			tt.host.Agent, tt.host.Builder = "a", &b
			err = ext.Register(extensions.NewAPI(Name, tt.host))
			if err == nil || err.Error() != tt.want {
				t.Errorf("Register = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestWhatIsSummarised: the messages since the newest summary, less the
// newest keep_recent (in whole units) and those that must stay, go to
// the summariser as a transcript and leave through Condense.
func TestWhatIsSummarised(t *testing.T) {
	tests := []struct {
		name, spec, settings string
		want                 []string // condensed IDs; nil: none, truncated instead
		reduced              []string
	}{
		{"all but the task and the newest two", "Uauauaua", "{}", []string{"m1", "m2", "m3", "m4", "m5"}, nil},
		{"since the last summary", "Uauasauauaua", "{}", []string{"m5", "m6", "m7", "m8", "m9"}, nil},
		{"a tool call goes with its result", "Ucrauaucrua", "{keep_recent: 3}", []string{"m1", "m2", "m3", "m4", "m5", "m6"}, nil},
		{"pinned messages stay", "UauAuauaua", "{}", []string{"m1", "m2", "m4", "m5", "m6", "m7"}, nil},
		{"too few: truncate instead", "Uauaua", "{}", nil, []string{"too_few_messages 0.75"}},
		{"min_messages and keep are the user's", "Uauaua", "{min_messages: 2, keep: 0.5, keep_recent: 1}", []string{"m1", "m2", "m3", "m4"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &fakeWindow{size: 1000, reserved: 100, msgs: msgs(tt.spec), tokens: 950, answer: " The user listed facts. "}
			r := newRig(t, tt.settings, w)
			r.step(t)
			switch {
			case tt.want == nil && len(w.condensed) != 0:
				t.Errorf("condensed %v, want none", w.condensed)
			case tt.want != nil && (len(w.condensed) != 1 || !slices.Equal(w.condensed[0], tt.want)):
				t.Errorf("condensed %v, want [%v]", w.condensed, tt.want)
			}
			if !slices.Equal(w.reduced, tt.reduced) {
				t.Errorf("reduced %q, want %q", w.reduced, tt.reduced)
			}
			if tt.want == nil {
				return
			}
			if len(w.completions) != 1 || w.completions[0].Model != "" || w.completions[0].System != summaryPrompt {
				t.Fatalf("completions %+v, want one to the agent's model with the summary prompt", w.completions)
			}
			tr := w.completions[0].Messages[0].Content
			for _, id := range tt.want {
				i := slices.IndexFunc(w.msgs, func(m pipeline.WindowMessage) bool { return m.Message.ID == id })
				if !strings.Contains(tr, w.msgs[i].Message.Content) {
					t.Errorf("transcript lacks %s (%q):\n%s", id, w.msgs[i].Message.Content, tr)
				}
			}
			s := w.summaries[0]
			if s.Content != "[Summary of the earlier conversation]\nThe user listed facts." || s.Source.Extension != Name {
				t.Errorf("summary = %+v", s)
			}
			if len(r.evs) != 1 || r.evs[0].TurnID != "turn-3" || r.evs[0].Source != Name {
				t.Fatalf("context.condensed events = %+v", r.evs)
			}
			d := r.evs[0].Data.(events.ContextCondensedData)
			if d.Condensed != len(tt.want) || d.SummaryID != "sum-1" || d.TokensBefore != 950 || d.Summariser != "self" || d.Before != len(w.msgs) ||
				d.After != len(w.msgs)-len(tt.want)+1 {
				t.Errorf("context.condensed data = %v", d)
			}
		})
	}
}

// TestWhenToCondense: past the window less the buffer and the reserved
// answer, corrected by what the provider reported for the last call.
func TestWhenToCondense(t *testing.T) {
	tests := []struct {
		name                 string
		settings             string
		size, reserved, toks int
		condenses            bool
	}{
		{"under the limit", "{}", 1000, 100, 700, false},
		{"at the limit", "{}", 1000, 100, 800, false},
		{"past it", "{}", 1000, 100, 801, true},
		{"no window: never", "{}", 0, 0, 1 << 30, false},
		{"the extension's own window", "{context_window: 500}", 0, 0, 451, true},
		{"a larger buffer", "{buffer: 0.5}", 1000, 100, 401, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &fakeWindow{size: tt.size, reserved: tt.reserved, msgs: msgs("Uauauaua"), tokens: tt.toks, answer: "sum"}
			newRig(t, tt.settings, w).step(t)
			if got := len(w.condensed) == 1; got != tt.condenses {
				t.Errorf("condensed = %v, want %v (tokens %d)", got, tt.condenses, tt.toks)
			}
		})
	}
}

// TestObservationCorrects: the ratio of the provider's reported input
// tokens to Window.Sent (read after Next, so after a reduction inside it)
// scales the next estimate, by at most double.
func TestObservationCorrects(t *testing.T) {
	w := &fakeWindow{size: 1000, reserved: 100, msgs: msgs("Uauauaua"), tokens: 500, answer: "sum"}
	w.onNext = func() { w.sent = 400 } // the runtime reduced the prompt to 400 and sent that
	r := newRig(t, "{}", w)
	r.next = func() *pipeline.StepResult { return &pipeline.StepResult{Usage: pipeline.Usage{InputTokens: 600}} }
	r.step(t)
	if o := r.c.obs["k"]; o.reported != 600 || o.counted != 400 {
		t.Fatalf("observation = %+v, want reported 600 against the 400 sent", o)
	}
	if len(w.condensed) != 0 {
		t.Fatalf("condensed at 500 of 800: %v", w.condensed)
	}
	// 550 counted × 1.5 = 825: past the limit of 800.
	w.tokens = 550
	r.step(t)
	if len(w.condensed) != 1 {
		t.Errorf("at 550 × 1.5 the window was not condensed")
	}
}

// TestSummariserFails: an error or an empty answer truncates instead; a
// summary that leaves the window too full is followed by a truncation.
func TestSummariserFails(t *testing.T) {
	tests := []struct {
		name    string
		answer  string
		err     error
		tokens  int
		reduced string
	}{
		{"error", "", errors.New("rate limited"), 950, "summary_failed 0.75"},
		{"empty", "  ", nil, 950, "summary_failed 0.75"},
		{"still over", "sum", nil, 9000, "still_over_limit 0.75"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &fakeWindow{size: 1000, reserved: 100, msgs: msgs("Uauauaua"), tokens: tt.tokens, answer: tt.answer, answerErr: tt.err}
			newRig(t, "{}", w).step(t)
			if !slices.Equal(w.reduced, []string{tt.reduced}) {
				t.Errorf("reduced %q, want [%s]", w.reduced, tt.reduced)
			}
		})
	}
}

// TestSummariserModel: summariser: model calls the model Register opened.
func TestSummariserModel(t *testing.T) {
	w := &fakeWindow{size: 1000, reserved: 100, msgs: msgs("Uauauaua"), tokens: 950, answer: "sum"}
	newRig(t, `{summariser: model, model: {provider: openai, name: small}}`, w).step(t)
	if len(w.completions) != 1 || w.completions[0].Model != "condense.model" {
		t.Fatalf("completions = %+v, want one to condense.model", w.completions)
	}
	if by := w.summaries[0].Metadata[pipeline.MetaSummary].(map[string]any)["by"]; by != "model" {
		t.Errorf("summary by %v, want model", by)
	}
}
