package protocol

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
)

// Name is the protocol extension's name in an agent's config.
const Name = "protocol"

// The kinds of the pending items the extension creates.
const (
	ItemQuestion     = "question"     // a USER_QUESTION
	ItemDependency   = "dependency"   // a DEPENDENCY_REQUEST
	ItemIntervention = "intervention" // the model made too many protocol mistakes in a row
)

// Defaults of the extension's settings.
const (
	defaultTimeout      = time.Hour
	defaultMistakeLimit = 3
)

// settings are the extension's config (see the package doc):
//
//	extensions:
//	  - name: protocol
//	    config:
//	      timeout: 1h               # how long a question or dependency waits
//	      question_timeout: 30m     # overrides timeout for questions
//	      dependency_timeout: 2h    # overrides timeout for dependencies
//	      mistake_limit: 3          # malformed blocks in a row before a human is asked
//	      max_block_size: 65536
type settings struct {
	Timeout           string `yaml:"timeout"`
	QuestionTimeout   string `yaml:"question_timeout"`
	DependencyTimeout string `yaml:"dependency_timeout"`
	MistakeLimit      int    `yaml:"mistake_limit"`
	MaxBlockSize      int    `yaml:"max_block_size"`
}

// extension is the protocol extension [Factory] makes: see there.
type extension struct {
	reg          *Registry
	opts         []scanOption
	qTimeout     time.Duration
	depTimeout   time.Duration
	mistakeLimit int

	api *extensions.API

	mu       sync.Mutex
	mistakes map[string]int // consecutive mistakes per running turn ("instance\x00turn")
}

// Factory returns the extension's factory, scanning for the kinds of reg
// (nil: [DefaultRegistry]). An app that adds block kinds registers them in
// reg and the factory under [Name].
//
// The protocol extension reads the model's
// output as it streams, pauses the turn on a USER_QUESTION or a
// DEPENDENCY_REQUEST until a human answers, publishes the other blocks as
// events, and sends malformed blocks back to the model as corrections.
//
// Its step middleware feeds a scanner from [pipeline.StepContext.WatchText]
// and acts when the step's model call is done:
//
//   - A problem with a block (never closed, unknown type, a required field
//     missing) becomes one correction message, appended to the
//     conversation, and the step asks for another step. None of the
//     response's blocks is acted on: the model writes them again, fixed.
//     It is a mistake; mistake_limit of them in a row, within a turn,
//     pause the turn on an "intervention" item a human answers with
//     guidance.
//   - Each USER_QUESTION and DEPENDENCY_REQUEST becomes a pending item,
//     and the turn ends with finish reason paused. It resumes when all are
//     resolved; the model reads the answers, and for a secret dependency
//     its name and where tools receive it, never its value.
//   - PHASE_COMPLETE, and blocks of kinds other extensions registered,
//     are published as "protocol.block" events (their Value as Data).
//
// Timeouts (default one hour): a required question stays paused with
// status timeout; an optional question resumes with its default; a
// required dependency fails the task; an optional one resumes without a
// value.
func Factory(reg *Registry) extensions.Factory {
	return func(cfg extensions.Config) (extensions.Extension, error) {
		return newExtension(reg, cfg)
	}
}

// newExtension returns the extension with the settings cfg holds (nil: defaults).
func newExtension(reg *Registry, cfg extensions.Config) (*extension, error) {
	if reg == nil {
		reg = DefaultRegistry()
	}
	var s settings
	if cfg != nil {
		if err := cfg.Decode(&s); err != nil {
			return nil, err
		}
	}
	x := &extension{reg: reg, mistakeLimit: s.MistakeLimit, mistakes: map[string]int{}}
	timeout, err := duration("timeout", s.Timeout, defaultTimeout)
	if err != nil {
		return nil, err
	}
	if x.qTimeout, err = duration("question_timeout", s.QuestionTimeout, timeout); err != nil {
		return nil, err
	}
	if x.depTimeout, err = duration("dependency_timeout", s.DependencyTimeout, timeout); err != nil {
		return nil, err
	}
	switch {
	case s.MistakeLimit == 0:
		x.mistakeLimit = defaultMistakeLimit
	case s.MistakeLimit < 0:
		return nil, fmt.Errorf("mistake_limit must be at least 1, got %d", s.MistakeLimit)
	}
	if s.MaxBlockSize < 0 {
		return nil, fmt.Errorf("max_block_size must be positive, got %d", s.MaxBlockSize)
	}
	if s.MaxBlockSize > 0 {
		x.opts = append(x.opts, maxBlockSize(s.MaxBlockSize))
	}
	return x, nil
}

func duration(field, s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s must be a positive duration such as 30m or 2h, got %q", field, s)
	}
	return d, nil
}

// Register installs the step and turn middleware and the pending kinds.
func (x *extension) Register(api *extensions.API) error {
	x.api = api
	for _, k := range []extensions.PendingKind{
		{Name: ItemQuestion, Resolve: x.resolveQuestion, Expire: expireQuestion},
		{Name: ItemDependency, Resolve: x.resolveDependency, Expire: expireDependency},
		{Name: ItemIntervention, Resolve: resolveIntervention, Expire: expireIntervention},
	} {
		if err := api.Pending.Handle(k); err != nil {
			return err
		}
	}
	api.Pipeline.Turn(x.turn)
	api.Pipeline.Step(x.step)
	return nil
}

// turn forgets the turn's mistake count when it ends.
func (x *extension) turn(ctx context.Context, t *pipeline.TurnContext) (*pipeline.TurnResult, error) {
	defer func() {
		x.mu.Lock()
		delete(x.mistakes, t.InstanceKey()+"\x00"+t.TurnID())
		x.mu.Unlock()
	}()
	return t.Next(ctx)
}

// step scans the model's text as it streams, then acts on what it found.
func (x *extension) step(ctx context.Context, s *pipeline.StepContext) (*pipeline.StepResult, error) {
	sc := newScanner(x.reg, x.opts...)
	var (
		evs     []event
		fed     int
		replied bool // the reply was read in WatchReply
		paused  bool
	)
	s.WatchText(func(d string) {
		fed += len(d)
		evs = append(evs, sc.feed(d)...)
	})
	// The blocks of the model's reply are acted on as soon as it is
	// complete, before it is stored: the pending items a question opens
	// are then committed with the message that asks it.
	s.WatchReply(func(ctx context.Context, m *pipeline.Message) error {
		replied = true
		evs = x.read(sc, evs, fed, m.Content)
		blocks, errs := split(evs)
		if len(errs) > 0 {
			return nil // sent back to the model once the step is done
		}
		var err error
		paused, err = x.pause(ctx, s, blocks)
		return err
	})
	sr, err := s.Next(ctx)
	if err != nil || sr == nil {
		return sr, err
	}
	if !replied {
		// A middleware inside this one answered the step: read what the
		// conversation will hold.
		evs = x.read(sc, evs, fed, sr.Message.Content)
	}
	blocks, errs := split(evs)
	key := s.InstanceKey() + "\x00" + s.TurnID()
	if len(errs) > 0 {
		return x.mistake(ctx, s, sr, key, errs)
	}
	x.mu.Lock()
	delete(x.mistakes, key)
	x.mu.Unlock()
	if !replied {
		if paused, err = x.pause(ctx, s, blocks); err != nil {
			return nil, err
		}
	}
	if paused {
		sr.Stop = pipeline.FinishPaused
	}
	return sr, nil
}

// read ends the scan of a reply whose text is content: the events of the
// text fed so far and of the scanner's close, or of content read afresh
// when that is not the text fed (a middleware wrote it, or changed it).
func (x *extension) read(sc *scanner, evs []event, fed int, content string) []event {
	if fed == len(content) {
		return append(evs, sc.close()...)
	}
	sc = newScanner(x.reg, x.opts...)
	evs = append(evs[:0], sc.feed(content)...)
	return append(evs, sc.close()...)
}

// split sorts events into blocks and errors.
func split(evs []event) (blocks []*Block, errs []*Error) {
	for _, ev := range evs {
		switch {
		case ev.Block != nil:
			blocks = append(blocks, ev.Block)
		case ev.Err != nil:
			errs = append(errs, ev.Err)
		}
	}
	return blocks, errs
}

// pause opens a pending item for each question and dependency request of
// blocks, publishes the other blocks, and reports whether it paused.
func (x *extension) pause(ctx context.Context, s *pipeline.StepContext, blocks []*Block) (bool, error) {
	paused := false
	for _, b := range blocks {
		var (
			kind    string
			timeout time.Duration
			req     any
			need    bool
		)
		switch v := b.Value.(type) {
		case *Question:
			kind, timeout, req, need = ItemQuestion, x.qTimeout, v, v.Required
		case *DependencyRequest:
			kind, timeout, req, need = ItemDependency, x.depTimeout, v, v.Required
		default:
			x.api.Events.PublishTurn("protocol.block", s.InstanceKey(), s.TurnID(),
				BlockEvent{Kind: b.Kind, Line: b.StartLine, Step: s.Index(), TurnID: s.TurnID(), Value: b.Value})
			continue
		}
		data, err := json.Marshal(req)
		if err != nil {
			return false, fmt.Errorf("encode %s: %w", b.Kind, err)
		}
		if _, err := x.api.Pending.Pause(ctx, s, ledger.Item{Kind: kind, Request: data, Required: need}, timeout); err != nil {
			return false, err
		}
		paused = true
	}
	return paused, nil
}

// mistake sends the problems back to the model, or, at the limit, pauses
// for a human.
func (x *extension) mistake(ctx context.Context, s *pipeline.StepContext, sr *pipeline.StepResult, key string, errs []*Error) (*pipeline.StepResult, error) {
	x.mu.Lock()
	x.mistakes[key]++
	n := x.mistakes[key]
	x.mu.Unlock()
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = "- " + e.Msg
	}
	x.api.Events.PublishTurn("protocol.mistake", s.InstanceKey(), s.TurnID(), MistakeEvent{Count: n, Errors: msgs, Step: s.Index(), TurnID: s.TurnID()})
	if n >= x.mistakeLimit {
		req, _ := json.Marshal(map[string]any{"mistakes": n, "errors": msgs})
		if _, err := x.api.Pending.Pause(ctx, s, ledger.Item{Kind: ItemIntervention, Request: req, Required: true}, 0); err != nil {
			return nil, err
		}
		x.mu.Lock()
		delete(x.mistakes, key)
		x.mu.Unlock()
		sr.Stop = pipeline.FinishPaused
		return sr, nil
	}
	text := "Your last message has protocol block problems, so none of its blocks was acted on:\n" +
		strings.Join(msgs, "\n") + "\nWrite the blocks again, corrected."
	err := s.EmitMessage(pipeline.MessageEvent{Type: pipeline.MessageAppend, Message: pipeline.Message{
		Role: pipeline.RoleUser, Content: text, Source: pipeline.Source{Type: pipeline.SourceExtension, Extension: x.api.Name},
		Metadata: map[string]any{"protocol_correction": n},
	}})
	if err != nil {
		return nil, err
	}
	sr.Continue = true
	return sr, nil
}

func invalidAction(format string, args ...any) error {
	return fmt.Errorf("%w: %s", extensions.ErrInvalidAction, fmt.Sprintf(format, args...))
}

func (x *extension) resolveQuestion(_ context.Context, it ledger.Item, act extensions.Action) (extensions.Outcome, error) {
	var q Question
	if err := json.Unmarshal(it.Request, &q); err != nil {
		return extensions.Outcome{}, fmt.Errorf("question is corrupt: %w", err)
	}
	switch act.Kind {
	case extensions.ActionAnswer:
		a, err := q.ValidateAnswer(act.Value)
		if err != nil {
			return extensions.Outcome{}, fmt.Errorf("%w: %w", extensions.ErrInvalidAction, err)
		}
		return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Answered, Answer: a,
			Message: fmt.Sprintf("Answer to your question %q: %s", q.Question, a)}}, nil
	case extensions.ActionSkip:
		a, err := q.Skip()
		if err != nil {
			return extensions.Outcome{}, fmt.Errorf("%w: %w", extensions.ErrInvalidAction, err)
		}
		return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Skipped, Answer: a,
			Message: withDefault(fmt.Sprintf("Your question %q was skipped", q.Question), a)}}, nil
	}
	return extensions.Outcome{}, invalidAction("a question is answered or skipped, not %s", pastTense(act.Kind))
}

func withDefault(prefix, def string) string {
	if def == "" {
		return prefix + "; it has no default: decide yourself."
	}
	return prefix + "; go on with the default: " + def
}

func expireQuestion(it ledger.Item) extensions.Outcome {
	var q Question
	_ = json.Unmarshal(it.Request, &q)
	if q.Required {
		return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Timeout, KeepOpen: true}}
	}
	return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Timeout, Answer: q.Default,
		Message: withDefault(fmt.Sprintf("Nobody answered your question %q in time", q.Question), q.Default)}}
}

func (x *extension) resolveDependency(_ context.Context, it ledger.Item, act extensions.Action) (extensions.Outcome, error) {
	var d DependencyRequest
	if err := json.Unmarshal(it.Request, &d); err != nil {
		return extensions.Outcome{}, fmt.Errorf("dependency request is corrupt: %w", err)
	}
	switch act.Kind {
	case extensions.ActionProvide:
		return x.provide(&d, act.Value)
	case extensions.ActionReject:
		reason := strings.TrimSpace(act.Reason)
		if reason == "" {
			reason = "no reason given"
		}
		if d.Required {
			return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Rejected, Fails: true,
				Reason: fmt.Sprintf("required dependency %s was rejected: %s", d.Name, reason)}}, nil
		}
		return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Rejected, Reason: reason,
			Message: fmt.Sprintf("The optional dependency %s (%s) was declined (%s); its value is empty: go on without it.", d.Name, d.Type, reason)}}, nil
	}
	return extensions.Outcome{}, invalidAction("a dependency is provided or rejected, not %s", pastTense(act.Kind))
}

// provide validates a dependency's value. The secret kinds (API keys,
// environment variables, service URLs, which often carry credentials) go
// to the runtime's encrypted store and reach commands as environment
// variables; the model reads only their name. A file's path, a
// permission's yes or no and a package's name are what the model needs
// to act on, and hold nothing secret: it reads them.
func (x *extension) provide(d *DependencyRequest, value string) (extensions.Outcome, error) {
	var root *os.Root
	if d.Type == TypeFile {
		if x.api.Workspace == "" {
			return extensions.Outcome{}, invalidAction("the agent has no workspace to hold file %s", d.Name)
		}
		r, err := os.OpenRoot(x.api.Workspace)
		if err != nil {
			return extensions.Outcome{}, fmt.Errorf("open the workspace: %w", err)
		}
		defer r.Close()
		root = r
	}
	v, err := ValidateDependencyValue(d, value, root)
	if err != nil {
		return extensions.Outcome{}, fmt.Errorf("%w: %w", extensions.ErrInvalidAction, err)
	}
	if v == "" { // an optional dependency declined with an empty value
		return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Provided,
			Message: fmt.Sprintf("The optional dependency %s (%s) was left empty: go on without it.", d.Name, d.Type)}}, nil
	}
	if env := secretEnvName(d); env != "" {
		return extensions.Outcome{
			Secret: &extensions.Secret{Name: env, Value: v},
			Resolution: ledger.Resolution{Status: ledger.Provided, Message: fmt.Sprintf(
				"The dependency %s (%s) was provided. Its value is not shown to you: execute_command receives it as the environment variable $%s.", d.Name, d.Type, env)},
		}, nil
	}
	msg := fmt.Sprintf("The dependency %s (%s) was provided: %s", d.Name, d.Type, v)
	switch d.Type {
	case TypeFile:
		msg = fmt.Sprintf("The file %s was provided at %s in the workspace.", d.Name, v)
	case TypePermission:
		msg = fmt.Sprintf("Permission %s: %s.", d.Name, v)
	}
	return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Provided, Answer: v, Message: msg}}, nil
}

// secretEnvName returns the environment variable under which commands
// receive the value of d, or "" if its value is not kept secret: the name
// itself for api_key and env_variable, and for a service the name upper
// cased with every other character than a letter or digit made "_".
func secretEnvName(d *DependencyRequest) string {
	switch d.Type {
	case TypeAPIKey, TypeEnvVariable:
		return d.Name
	case TypeService:
		var b strings.Builder
		for _, r := range strings.ToUpper(d.Name) {
			if r < 128 && (r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				b.WriteRune(r)
			} else {
				b.WriteByte('_')
			}
		}
		s := strings.Trim(b.String(), "_")
		if s == "" || s[0] >= '0' && s[0] <= '9' {
			s = "SERVICE_" + s
		}
		if len(s) > 64 {
			s = s[:64]
		}
		return s
	}
	return ""
}

func expireDependency(it ledger.Item) extensions.Outcome {
	var d DependencyRequest
	_ = json.Unmarshal(it.Request, &d)
	if d.Required {
		return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Timeout, Fails: true,
			Reason: fmt.Sprintf("required dependency %s was not provided in time", d.Name)}}
	}
	return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Timeout,
		Message: fmt.Sprintf("The optional dependency %s (%s) was not provided in time; its value is empty: go on without it.", d.Name, d.Type)}}
}

func resolveIntervention(_ context.Context, it ledger.Item, act extensions.Action) (extensions.Outcome, error) {
	if act.Kind != extensions.ActionAnswer {
		return extensions.Outcome{}, invalidAction("answer an intervention with guidance for the model")
	}
	g := strings.TrimSpace(act.Value)
	if g == "" {
		return extensions.Outcome{}, invalidAction("guidance is required")
	}
	return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Answered, Answer: g,
		Message: "Your protocol blocks failed several times in a row. Guidance from the user: " + g}}, nil
}

func expireIntervention(ledger.Item) extensions.Outcome {
	return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Timeout, KeepOpen: true}}
}

var _ extensions.Extension = (*extension)(nil)

// pastTense names what an action did: "skipped", "provided".
func pastTense(k extensions.ActionKind) string {
	switch k {
	case extensions.ActionSkip:
		return "skipped"
	case extensions.ActionEdit:
		return "edited"
	}
	return strings.TrimSuffix(string(k), "e") + "ed" // answered, provided, rejected
}
