package approval

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/internal/plainjson"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
)

// Name is the approval extension's name in an agent's config.
const Name = "approval"

// settings are the extension's config (see the package doc's Settings):
//
//	extensions:
//	  - name: approval
//	    config:
//	      rules: rules.yaml   # relative to the config file
type settings struct {
	Rules string `yaml:"rules"`
	// Timeout is how long an ask waits for a human (default 1h); no
	// answer in time counts as deny.
	Timeout string `yaml:"timeout"`
	// MistakeLimit is how many tool calls in a row may fail (a tool
	// error, malformed arguments) before a human is asked whether the
	// agent should go on. Default 3.
	MistakeLimit int `yaml:"mistake_limit"`
	// RepetitionLimit is how many calls in a row of the same tool with the
	// same arguments pause the agent for a human's guidance; the call that
	// reaches it does not run. Default 3; at least 2. An agent that polls
	// (the same command until something changes) wants a higher one.
	RepetitionLimit int `yaml:"repetition_limit"`
}

// The defaults of settings.MistakeLimit and settings.RepetitionLimit.
const (
	defaultMistakeLimit    = 3
	defaultRepetitionLimit = 3
)

// maxTracked bounds the instances whose last call the repetition check
// remembers: past it, an instance's count is forgotten to make room.
const maxTracked = 4096

// The ledger kinds of the items the extension pauses on: an ask (answer
// "approve" or "deny", or edit the call's arguments), the question whether
// to go on after too many failed tool calls in a row (any answer is
// guidance for the model), and the same question after the same call too
// many times in a row (likewise). Their Requests are JSON objects:
//
//	approval    {"tool", "args", "explanation", "matched": [{"rule", "decision", "reason"}]}
//	mistakes    {"failures", "tool", "error"}
//	repetition  {"tool", "args", "calls"}
//
// A resolved approval's Answer is "approve", "deny", "timeout", or, for an
// edit, "edit " followed by the arguments the human approved (compact
// JSON).
const (
	ItemApproval   = "approval"
	ItemMistakes   = "mistakes"
	ItemRepetition = "repetition"
)

// editPrefix starts the Answer of an approval a human edited.
const editPrefix = "edit "

// defaultTimeout is how long an ask waits by default.
const defaultTimeout = time.Hour

// extension is the built-in approval extension: a toolCall middleware that
// decides approve, deny or ask for every tool call with the rules of a
// file, before the tool runs. Editing the file takes effect at the next
// tool call; an edit that does not load is refused, the rules in force
// stay, and an "approval.reload_failed" event says why.
type extension struct {
	path            string
	timeout         time.Duration
	mistakeLimit    int
	repetitionLimit int
	api             *extensions.API

	failMu   sync.Mutex
	failures map[string]int // failed calls in a row, per instance

	repMu   sync.Mutex
	repeats map[string]repeat // the last call, per instance

	mu    sync.Mutex
	rules *Rules
	mtime time.Time
	size  int64
}

// dirConfig is implemented by the runtime's extension configs.
type dirConfig interface{ Dir() string }

// New returns the extension with the settings cfg holds.
func New(cfg extensions.Config) (extensions.Extension, error) {
	var s settings
	if cfg != nil {
		if err := cfg.Decode(&s); err != nil {
			return nil, err
		}
	}
	if s.Rules == "" {
		return nil, fmt.Errorf("rules: name the rules file (config: {rules: rules.yaml})")
	}
	path := s.Rules
	if d, ok := cfg.(dirConfig); ok && d.Dir() != "" && !filepath.IsAbs(path) {
		path = filepath.Join(d.Dir(), path)
	}
	x := &extension{path: path, timeout: defaultTimeout, mistakeLimit: defaultMistakeLimit, repetitionLimit: defaultRepetitionLimit,
		failures: map[string]int{}, repeats: map[string]repeat{}}
	switch {
	case s.MistakeLimit < 0:
		return nil, fmt.Errorf("mistake_limit must be at least 1, got %d", s.MistakeLimit)
	case s.MistakeLimit > 0:
		x.mistakeLimit = s.MistakeLimit
	}
	switch {
	case s.RepetitionLimit < 0 || s.RepetitionLimit == 1:
		return nil, fmt.Errorf("repetition_limit must be at least 2 (a call and a repeat of it), got %d", s.RepetitionLimit)
	case s.RepetitionLimit > 0:
		x.repetitionLimit = s.RepetitionLimit
	}
	if s.Timeout != "" {
		d, err := time.ParseDuration(s.Timeout)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("timeout must be a positive duration such as 30m or 2h, got %q", s.Timeout)
		}
		x.timeout = d
	}
	if err := x.reload(); err != nil {
		return nil, err
	}
	return x, nil
}

// currentRules returns the rules in force.
func (x *extension) currentRules() *Rules {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.rules
}

// reload loads the file if it changed since the last load.
func (x *extension) reload() error {
	fi, err := os.Stat(x.path)
	if err != nil {
		return fmt.Errorf("rules: %w", err)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.rules != nil && fi.ModTime().Equal(x.mtime) && fi.Size() == x.size {
		return nil
	}
	r, err := load(x.path, withWorkspace(x.workspace()))
	if err != nil {
		// Keep what is in force; remember the file, so that a broken
		// edit is reported once, not at every call.
		x.mtime, x.size = fi.ModTime(), fi.Size()
		return err
	}
	x.rules, x.mtime, x.size = r, fi.ModTime(), fi.Size()
	return nil
}

func (x *extension) workspace() string {
	if x.api == nil {
		return ""
	}
	return x.api.Workspace
}

// Register installs the toolCall middleware and the ask's pending kind.
func (x *extension) Register(api *extensions.API) error {
	x.api = api
	if err := api.Pending.Handle(extensions.PendingKind{Name: ItemApproval, Resolve: resolveAsk, Expire: expireAsk, Resume: resumeAsk}); err != nil {
		return err
	}
	if err := api.Pending.Handle(extensions.PendingKind{Name: ItemMistakes, Resolve: resolveMistakes}); err != nil {
		return err
	}
	if err := api.Pending.Handle(extensions.PendingKind{Name: ItemRepetition, Resolve: resolveRepetition, Resume: resumeRepetition}); err != nil {
		return err
	}
	api.Pipeline.ToolCall(x.toolCall)
	return nil
}

// approvedKey marks, in the context of a call a human approved, the
// call's ID: the middleware runs it without asking again (a deny of the
// rules still stands) and without counting it again as a repetition.
type approvedKey struct{}

// askRequest is the Request of an [ItemApproval] item: the call that
// waits, and the rules that asked for a human.
type askRequest struct {
	Tool        string          `json:"tool"`
	Args        json.RawMessage `json:"args"`
	Explanation string          `json:"explanation"`
	Matched     []Match         `json:"matched"`
}

// mistakesRequest is the Request of an [ItemMistakes] item.
type mistakesRequest struct {
	Failures int    `json:"failures"`
	Tool     string `json:"tool"`
	Error    string `json:"error"`
}

// repetitionRequest is the Request of an [ItemRepetition] item: the call
// the model made Calls times in a row, the last of which did not run.
type repetitionRequest struct {
	Tool  string          `json:"tool"`
	Args  json.RawMessage `json:"args"`
	Calls int             `json:"calls"`
}

// rawArgs returns a call's arguments as a JSON value for a request: as they
// are, or as a string when the model wrote something that is not JSON.
func rawArgs(args []byte) json.RawMessage {
	if len(args) == 0 || json.Valid(args) {
		return json.RawMessage(args)
	}
	s, _ := json.Marshal(string(args))
	return s
}

func resolveAsk(_ context.Context, it ledger.Item, act extensions.Action) (extensions.Outcome, error) {
	var req askRequest
	_ = json.Unmarshal(it.Request, &req)
	switch act.Kind {
	case extensions.ActionAnswer:
		switch v := strings.ToLower(strings.TrimSpace(act.Value)); v {
		case "approve", "approved", "yes", "y", "ok", "allow":
			return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Answered, Answer: string(Approve),
				Message: fmt.Sprintf("A human approved the call of %s; it ran.", req.Tool)}}, nil
		case "deny", "denied", "no", "n", "reject":
			return deniedOutcome(req.Tool, "")
		case "edit":
			return extensions.Outcome{}, fmt.Errorf("%w: an edit needs the call's new arguments, a JSON object", extensions.ErrInvalidAction)
		}
		return extensions.Outcome{}, fmt.Errorf("%w: answer approve or deny, or edit the call's arguments, not %q", extensions.ErrInvalidAction, act.Value)
	case extensions.ActionEdit:
		// The runtime checked the arguments against the tool's schema.
		b, err := plainjson.Compact([]byte(act.Value))
		if err != nil {
			return extensions.Outcome{}, fmt.Errorf("%w: the edited arguments are not JSON: %v", extensions.ErrInvalidAction, err)
		}
		return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Answered, Answer: editPrefix + string(b),
			Message: fmt.Sprintf("A human edited the arguments of the call of %s and approved it with theirs; its result shows them.", req.Tool)}}, nil
	case extensions.ActionReject:
		return deniedOutcome(req.Tool, strings.TrimSpace(act.Reason))
	}
	return extensions.Outcome{}, fmt.Errorf("%w: answer an approval with approve or deny, edit its arguments, or reject it", extensions.ErrInvalidAction)
}

func deniedOutcome(tool, reason string) (extensions.Outcome, error) {
	msg := fmt.Sprintf("A human denied the call of %s; it did not run.", tool)
	if reason != "" {
		msg = fmt.Sprintf("A human denied the call of %s (%s); it did not run.", tool, reason)
	}
	return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Rejected, Answer: string(Deny), Reason: reason, Message: msg}}, nil
}

func expireAsk(it ledger.Item) extensions.Outcome {
	var req askRequest
	_ = json.Unmarshal(it.Request, &req)
	return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Timeout, Answer: string(timedOut),
		Message: fmt.Sprintf("Nobody approved the call of %s in time; it did not run.", req.Tool)}}
}

// resumeAsk runs an approved call, once, with the arguments a human
// edited if they did, or gives a denied one its result.
func resumeAsk(ctx context.Context, it ledger.Item, rc extensions.ResumeCall) error {
	args, edited := strings.CutPrefix(it.Answer, editPrefix)
	if it.Answer == string(Approve) || edited {
		ctx = context.WithValue(ctx, approvedKey{}, it.CallID)
		var res *pipeline.ToolResult
		var err error
		if edited {
			res, err = rc.RunWith(ctx, json.RawMessage(args))
		} else {
			res, err = rc.Run(ctx)
		}
		if err != nil {
			return err
		}
		return rc.Result(res.Content, res.IsError)
	}
	why := "a human denied it"
	switch {
	case it.Answer == string(timedOut):
		why = "nobody approved it in time"
	case it.Reason != "":
		why += ": " + it.Reason
	}
	return rc.Result("tool call denied: "+why, true)
}

func (x *extension) toolCall(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
	if err := x.reload(); err != nil {
		x.api.Logger.Warn("rules file not reloaded; the rules in force stay", "err", err)
		x.api.Events.PublishTurn("approval.reload_failed", c.InstanceKey(), c.TurnID(), ReloadFailedEvent{Error: err.Error(), File: x.path})
	}
	// A call a human approved runs in the resume turn: it was counted
	// when the model made it.
	id, _ := ctx.Value(approvedKey{}).(string)
	approved := id != "" && id == c.CallID()
	if !approved {
		if n := x.repeated(c); n >= x.repetitionLimit {
			return x.pauseRepetition(ctx, c, n)
		}
	}
	rules := x.currentRules()
	t, _ := c.Tool()
	call := Call{Tool: c.Name(), Category: t.Category, Args: c.Arguments(), Agent: c.Agent(),
		Instance: c.InstanceKey(), Turn: c.TurnID(), Step: c.Step(), Workspace: x.api.Workspace, Chain: callChain(c.Input())}
	res := rules.Decide(call)
	res = x.narrow(res, call)
	x.api.Events.PublishTurn("approval.decided", c.InstanceKey(), c.TurnID(), DecidedEvent{CallID: c.CallID(), Decision: res.Decision,
		Explanation: res.Explanation, Matched: res.Matched, Tool: c.Name(), TurnID: c.TurnID()})
	for _, e := range res.Errors {
		x.api.Events.PublishTurn("approval.rule_error", c.InstanceKey(), c.TurnID(), RuleErrorEvent{Error: e, Tool: c.Name(), TurnID: c.TurnID()})
	}
	switch res.Decision {
	case Approve:
		return x.run(ctx, c)
	case Deny:
		return &pipeline.ToolResult{CallID: c.CallID(), Name: c.Name(), IsError: true,
			Content: fmt.Sprintf("tool call denied: %s", res.Explanation)}, nil
	}
	// Ask: a call a human approved runs; any other pauses the turn.
	if approved {
		return x.run(ctx, c)
	}
	req, _ := json.Marshal(askRequest{Tool: c.Name(), Args: rawArgs(c.Arguments()), Explanation: res.Explanation, Matched: res.Matched})
	it, err := x.api.Pending.PauseCall(ctx, c, ledger.Item{Kind: ItemApproval, Request: req, Required: true}, x.timeout)
	if err != nil {
		return nil, err
	}
	return &pipeline.ToolResult{CallID: c.CallID(), Name: c.Name(),
		Content: fmt.Sprintf("waiting for a human's approval (pending item %s): %s", it.ID, res.Explanation)}, nil
}

var _ extensions.Extension = (*extension)(nil)

// run runs the call and counts the failed calls in a row: at the limit,
// the turn pauses after its step for a human to say whether to go on.
func (x *extension) run(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
	r, err := c.Next(ctx)
	if err != nil || r == nil {
		return r, err
	}
	x.failMu.Lock()
	n := 0
	if r.IsError {
		x.failures[c.InstanceKey()]++
		n = x.failures[c.InstanceKey()]
		if n >= x.mistakeLimit {
			delete(x.failures, c.InstanceKey())
		}
	} else {
		delete(x.failures, c.InstanceKey())
	}
	x.failMu.Unlock()
	if n < x.mistakeLimit {
		return r, nil
	}
	req, _ := json.Marshal(mistakesRequest{Failures: n, Tool: c.Name(), Error: r.Content})
	if _, err := x.api.Pending.PauseCall(ctx, c, ledger.Item{Kind: ItemMistakes, Request: req, Required: true}, x.timeout); err != nil {
		return nil, err
	}
	x.api.Events.PublishTurn("approval.mistake_limit", c.InstanceKey(), c.TurnID(), MistakeLimitEvent{Failures: n, Tool: c.Name(), TurnID: c.TurnID()})
	return r, nil
}

func resolveMistakes(_ context.Context, it ledger.Item, act extensions.Action) (extensions.Outcome, error) {
	var req struct {
		Failures int `json:"failures"`
	}
	_ = json.Unmarshal(it.Request, &req)
	return resolveGuidance(act,
		func(g string) string {
			return fmt.Sprintf("%d tool calls in a row failed. The user says: %s", req.Failures, g)
		},
		func(reason string) string {
			return "stopped after " + strconv.Itoa(req.Failures) + " failed tool calls in a row: " + reason
		})
}

// resolveGuidance resolves an item that asks a human how a stuck agent
// goes on: an answer is guidance, which the model reads as message(answer);
// a rejection fails the task, for stopped(reason).
func resolveGuidance(act extensions.Action, message, stopped func(string) string) (extensions.Outcome, error) {
	switch act.Kind {
	case extensions.ActionAnswer:
		g := strings.TrimSpace(act.Value)
		if g == "" {
			return extensions.Outcome{}, fmt.Errorf("%w: answer with guidance for the agent, or reject to stop it", extensions.ErrInvalidAction)
		}
		return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Answered, Answer: g, Message: message(g)}}, nil
	case extensions.ActionReject:
		reason := strings.TrimSpace(act.Reason)
		if reason == "" {
			reason = "no reason given"
		}
		return extensions.Outcome{Resolution: ledger.Resolution{Status: ledger.Rejected, Fails: true, Reason: stopped(reason)}}, nil
	}
	return extensions.Outcome{}, fmt.Errorf("%w: answer with guidance, or reject to stop the agent", extensions.ErrInvalidAction)
}

// repeat is an instance's last call and how many times in a row the
// model made it.
type repeat struct {
	key  [sha256.Size]byte // of the tool's name and the canonical arguments
	turn string            // the turn of the last call
	n    int
}

// repeated counts the call and returns how many times in a row the
// instance made it. A turn that handles a user message starts the count
// afresh: a person who asks for the same call again is not a loop.
func (x *extension) repeated(c *pipeline.ToolCallContext) int {
	key := callKey(c.Name(), c.Arguments())
	fresh := c.Input().Kind == pipeline.InputUserMessage
	x.repMu.Lock()
	defer x.repMu.Unlock()
	r, ok := x.repeats[c.InstanceKey()]
	switch {
	case ok && r.key == key && (r.turn == c.TurnID() || !fresh):
		r.n++
	default:
		if !ok && len(x.repeats) >= maxTracked {
			for k := range x.repeats { // forget one, any
				delete(x.repeats, k)
				break
			}
		}
		r = repeat{key: key, n: 1}
	}
	r.turn = c.TurnID()
	if r.n >= x.repetitionLimit {
		delete(x.repeats, c.InstanceKey()) // the human's guidance starts anew
	} else {
		x.repeats[c.InstanceKey()] = r
	}
	return r.n
}

// callKey identifies a call by its tool and its arguments in canonical
// form, so that key order, spacing and escapes do not make two calls
// differ. Arguments that are not JSON are taken as they are.
func callKey(tool string, args []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(canonicalJSON(args))
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

// canonicalJSON returns raw re-encoded with sorted keys and no spacing
// (numbers as written), or raw itself if it is not JSON.
func canonicalJSON(raw []byte) []byte {
	if !json.Valid(raw) {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return b
}

// pauseRepetition pauses the turn on the call the model made n times in a
// row, without running it.
func (x *extension) pauseRepetition(ctx context.Context, c *pipeline.ToolCallContext, n int) (*pipeline.ToolResult, error) {
	req, _ := json.Marshal(repetitionRequest{Tool: c.Name(), Args: rawArgs(c.Arguments()), Calls: n})
	it, err := x.api.Pending.PauseCall(ctx, c, ledger.Item{Kind: ItemRepetition, Request: req, Required: true}, 0)
	if err != nil {
		return nil, err
	}
	x.api.Events.PublishTurn("approval.repetition_limit", c.InstanceKey(), c.TurnID(), RepetitionLimitEvent{CallID: c.CallID(), Calls: n, Tool: c.Name(), TurnID: c.TurnID()})
	return &pipeline.ToolResult{CallID: c.CallID(), Name: c.Name(), IsError: true,
		Content: fmt.Sprintf("not run: %s was called with the same arguments %d times in a row; a human was asked for guidance (pending item %s)", c.Name(), n, it.ID)}, nil
}

func resolveRepetition(_ context.Context, it ledger.Item, act extensions.Action) (extensions.Outcome, error) {
	var req repetitionRequest
	_ = json.Unmarshal(it.Request, &req)
	return resolveGuidance(act,
		func(g string) string {
			return fmt.Sprintf("You called %s with the same arguments %d times in a row; the last call did not run. The user says: %s", req.Tool, req.Calls, g)
		},
		func(reason string) string {
			return fmt.Sprintf("stopped after %d calls in a row of %s with the same arguments: %s", req.Calls, req.Tool, reason)
		})
}

// resumeRepetition gives the call that did not run its result: what the
// human said.
func resumeRepetition(_ context.Context, it ledger.Item, rc extensions.ResumeCall) error {
	if it.Status != ledger.Answered {
		return nil // a rejection failed the task: the placeholder stays
	}
	var req repetitionRequest
	_ = json.Unmarshal(it.Request, &req)
	return rc.Result(fmt.Sprintf("not run: %s was called with the same arguments %d times in a row; the user says: %s", req.Tool, req.Calls, it.Answer), true)
}

// narrow applies the rules of the agents behind the call, when another
// agent started the turn (ctx.agents or call_agent): each caller's approval
// rules judge the call too, and the strictest decision wins, so a called
// agent's own rules can only make a decision stricter.
func (x *extension) narrow(res Result, call Call) Result {
	seen := map[string]bool{call.Agent: true}
	for _, caller := range call.Chain {
		if seen[caller] {
			continue
		}
		seen[caller] = true
		p, ok := x.api.Peer(caller, x.api.Name)
		if !ok {
			continue
		}
		px, ok := p.(*extension)
		if !ok {
			continue
		}
		if err := px.reload(); err != nil {
			x.api.Logger.Warn("a caller's rules file was not reloaded; its rules in force stay", "caller", caller, "err", err)
		}
		res = res.narrowedBy(caller, px.currentRules().Decide(call))
	}
	return res
}

// callChain returns the agents of the call chain that started the turn,
// the first caller first, from the input's metadata (see runtime's agent
// calls and delegation: "agent/instance" entries, the delegation ancestry
// under taskChain, then the waiting callers under chain).
func callChain(in pipeline.InputEvent) []string {
	var out []string
	add := func(s string) {
		if a, _, ok := strings.Cut(s, "/"); ok {
			out = append(out, a)
		} else if s != "" {
			out = append(out, s)
		}
	}
	for _, key := range []string{"taskChain", "chain"} {
		switch ch := in.Metadata[key].(type) {
		case []string:
			for _, s := range ch {
				add(s)
			}
		case []any:
			for _, e := range ch {
				if s, ok := e.(string); ok {
					add(s)
				}
			}
		}
	}
	return out
}
