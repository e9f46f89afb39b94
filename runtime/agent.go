package runtime

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/config"
	"github.com/ganglion-dev/ganglion/runtime/internal/delegation"
	"github.com/ganglion-dev/ganglion/runtime/internal/engine"
	"github.com/ganglion-dev/ganglion/runtime/internal/seam"
	"github.com/ganglion-dev/ganglion/runtime/internal/tokens"
	"github.com/ganglion-dev/ganglion/runtime/internal/tool"
	"github.com/ganglion-dev/ganglion/runtime/model"
	"github.com/ganglion-dev/ganglion/runtime/model/xmltools"
)

// agent is an agent as configured, with its model, tools and pipeline
// (the engine's part, engine.Agent) and what the runtime's features know
// of it. Immutable after buildAgent.
type agent struct {
	*engine.Agent
	rt          *Runtime
	description string
	apis        []*extensions.API
	exts        map[string]extensions.Extension // by configured name
	closers     []extensions.Closer
	sourced     []seam.StepTools // the tool sources that offer it tools (MCP servers)
	// team is its team, "" for a system-level agent; peers are the agents
	// it may call_agent: its teammates, or the other system-level agents.
	team         string
	peers        []string
	canCallTeams bool // it has call_team_agent
	// loadErr is why the agent failed to load ([WithPartialLoad]); an agent
	// with one has no model, tools or pipeline, and runs no turn.
	loadErr error
}

// newAgent returns the agent named name, with nothing to run yet.
func (r *Runtime) newAgent(name, description string) *agent {
	a := &agent{rt: r, description: description}
	a.Agent = &engine.Agent{Name: name, Logger: r.logger.With("agent", name), Env: &r.env, Host: a}
	return a
}

// hostOf returns the runtime's agent of engine agent e.
func hostOf(e *engine.Agent) *agent { return e.Host.(*agent) }

// unavailableAgent stands for an agent that failed to load with err: it
// keeps the agent's name for reading what is stored, and nothing to run.
func (r *Runtime) unavailableAgent(ac config.Agent, err error) *agent {
	r.logger.Error("agent is unavailable: it failed to load; the other agents run", "agent", ac.Name, "err", err)
	a := r.newAgent(ac.Name, ac.Description)
	a.loadErr = err
	return a
}

// available returns nil if the agent loaded, else an error wrapping
// [ErrAgentUnavailable] and why it did not.
func (a *agent) available() error {
	if a.loadErr == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrAgentUnavailable, a.loadErr)
}

// Unavailable returns why each agent failed to load ([WithPartialLoad]).
func (r *Runtime) Unavailable() map[string]error {
	out := map[string]error{}
	for name, a := range r.agents.byName {
		if a.loadErr != nil {
			out[name] = a.loadErr
		}
	}
	return out
}

// AgentInfo describes one agent.
type AgentInfo struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Team is "" for an agent in no team.
	Team string `json:"team,omitempty"`
	// Tools are the config's and its extensions', not the system tools.
	Tools []string `json:"tools"`
	// Unavailable says why it failed to load; "" if it runs.
	Unavailable string `json:"unavailable,omitempty"`
}

// Describe returns the agents, in config order, and the teams.
func (r *Runtime) Describe() ([]AgentInfo, []config.Team) {
	out := make([]AgentInfo, 0, len(r.agents.names))
	for _, name := range r.agents.names {
		a := r.agents.byName[name]
		info := AgentInfo{Name: name, Description: a.description, Team: r.agents.teamOf[name], Tools: []string{}}
		for _, t := range a.Tools {
			info.Tools = append(info.Tools, t.Name)
		}
		if a.loadErr != nil {
			info.Unavailable = a.loadErr.Error()
		}
		out = append(out, info)
	}
	return out, slices.Clone(r.agents.teams)
}

func (r *Runtime) buildAgent(ctx context.Context, o *options, ac config.Agent, reg *tool.Registry, providers map[string]model.Provider) (*agent, error) {
	a := r.newAgent(ac.Name, ac.Description)
	a.System, a.MaxSteps = ac.System, ac.MaxSteps
	if ac.Model != nil {
		a.Tokens = tokens.ForModel(ac.Model.Name)
	} else {
		a.Tokens = tokens.Cl100k()
	}
	a.Counter = a.CountTokens
	if a.MaxSteps <= 0 {
		a.MaxSteps = config.DefaultMaxSteps
	}
	if err := a.openModel(o, ac, providers); err != nil {
		return nil, fmt.Errorf("agent %q: model: %w", ac.Name, err)
	}
	tools, err := reg.Select(ac.Tools)
	if err != nil {
		return nil, fmt.Errorf("agent %q: %w", ac.Name, err)
	}
	a.Tools = a.delegationScope(tools)
	for _, src := range a.rt.kit.sources {
		if st := src.ForAgent(ac); st != nil {
			a.sourced = append(a.sourced, st)
		}
	}
	if len(a.sourced) > 0 {
		a.StepTools = a.stepTools
	}

	var b pipeline.Builder
	for _, ec := range ac.Extensions {
		if err := a.loadExtension(ctx, o, ec, &b); err != nil {
			a.close()
			if positioned(err) {
				return nil, err
			}
			return nil, fmt.Errorf("agent %q: %w", ac.Name, err)
		}
	}
	a.Tools = slices.Clip(a.Tools)
	// Replaying, the runtime's own tools run, as the extensions' do
	// (addTool): they are the code under test.
	for _, name := range delegation.ToolNames {
		a.live(name)
	}
	h := pipeline.Handlers{
		Turn:     a.TurnHandler,
		Step:     a.StepHandler,
		ToolCall: a.ToolHandler,
		OnSkip:   a.layerSkipped,
	}
	if r.obs.tel != nil {
		h.ObserveStart, h.ObserveEnd = r.obs.tel.Layers(a.Name)
	}
	a.Pipe, err = b.Build(h)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// delegationScope sets whom a may delegate to, and returns tools without
// the delegation tools a has no use for: call_agent is offered only to an
// agent with someone to delegate to.
func (a *agent) delegationScope(tools []pipeline.Tool) []pipeline.Tool {
	r := a.rt
	a.team = r.agents.teamOf[a.Name]
	a.peers = r.agents.peers(a.Name)
	return slices.DeleteFunc(tools, func(t pipeline.Tool) bool {
		switch {
		case t.Name == delegation.ToolCallAgent && len(a.peers) == 0:
			a.Logger.Info("call_agent is not offered: the agent has nobody to delegate to")
			return true
		case t.Name == delegation.ToolCallTeamAgent && (a.team != "" || len(r.agents.teams) == 0):
			a.Logger.Info("call_team_agent is not offered: the config defines no team")
			return true
		case t.Name == delegation.ToolCallTeamAgent:
			a.canCallTeams = true
		}
		return false
	})
}

func (a *agent) openModel(o *options, ac config.Agent, providers map[string]model.Provider) error {
	if err := a.openProvider(o, ac); err != nil {
		return err
	}
	if ac.Model != nil && ac.Model.ToolProtocol == config.ToolProtocolXML {
		// Tool calls as XML in the text: the model is shown the tools in
		// its system prompt and its answers are parsed.
		a.Model = xmltools.Wrap(a.Model)
	}
	return nil
}

// openProvider sets a.Model: WithModel's provider, else the config's,
// retrying as its model settings say.
func (a *agent) openProvider(o *options, ac config.Agent) error {
	if ac.Model != nil {
		a.Provider = ac.Model.Provider
		a.ModelName = ac.Model.Name
		a.MaxOutput = ac.Model.MaxOutputTokens
		a.ContextWindow = ac.Model.ContextWindow
	}
	var err error
	a.Model, err = a.rt.taped("", func() (model.Provider, error) {
		if o.model != nil {
			return o.model, nil
		}
		if ac.Model == nil {
			return nil, errors.New("no model configured")
		}
		f, ok := o.providers[ac.Model.Provider]
		if !ok {
			return nil, unknownProvider(ac.Model.Provider)
		}
		p, err := f(*ac.Model)
		if err != nil {
			return nil, err
		}
		return a.retrying(p, ac.Model), nil
	})
	return err
}

// taped opens a model provider, through the tape if there is one: what
// it records is what the runtime got after retries.
func (r *Runtime) taped(label string, open func() (model.Provider, error)) (model.Provider, error) {
	if r.obs.tape == nil {
		return open()
	}
	return r.obs.tape.Provider(label, open)
}

// openExtensionModel opens the model described under key of extension
// ec's config and returns the name its middleware calls it by:
// "extension.key".
func (a *agent) openExtensionModel(o *options, ec config.Extension, key string) (string, error) {
	var m config.Model
	found, err := ec.DecodeKey(key, &m)
	switch {
	case err != nil:
		return "", err
	case !found:
		return "", fmt.Errorf("no %s in the extension's config", key)
	case m.Provider == "":
		return "", fmt.Errorf("%s needs a provider", key)
	}
	f, ok := o.providers[m.Provider]
	if !ok {
		return "", unknownProvider(m.Provider)
	}
	if m.Script != "" && !filepath.IsAbs(m.Script) && ec.Dir() != "" {
		m.Script = filepath.Join(ec.Dir(), m.Script)
	}
	name := ec.Name + "." + key
	p, err := a.rt.taped(name, func() (model.Provider, error) {
		p, err := f(m)
		if err != nil {
			return nil, err
		}
		return a.retrying(p, &m), nil
	})
	if err != nil {
		return "", err
	}
	if a.Models == nil {
		a.Models = map[string]engine.Opened{}
	}
	a.Models[name] = engine.Opened{Provider: p, Name: m.Name, MaxOutput: m.MaxOutputTokens}
	return name, nil
}

func (a *agent) loadExtension(ctx context.Context, o *options, ec config.Extension, b *pipeline.Builder) error {
	onErr, err := pipeline.ParseOnError(ec.OnError)
	if err != nil {
		return fmt.Errorf("extension %q: %w", ec.Name, err)
	}
	var ext extensions.Extension
	if ec.Wasm != "" {
		if ext, err = a.rt.loadWasm(ctx, ec); err != nil {
			if positioned(err) {
				return err // a refused setting, at its place in the config
			}
			return fmt.Errorf("extension %q: %w", ec.Name, err)
		}
	} else {
		f, ok := o.exts.Lookup(ec.Name)
		if !ok {
			return fmt.Errorf("unknown extension %q", ec.Name)
		}
		if ext, err = f(ec); err != nil {
			if positioned(err) {
				return err // it names the file, line, agent and extension already
			}
			return fmt.Errorf("extension %q: %w", ec.Name, err)
		}
	}
	api := extensions.NewAPI(ec.Name, extensions.Host{
		Agent: a.Name, Builder: b, Store: a.rt.place.State(), Bus: a.rt.env.Bus, Logger: a.rt.logger,
		Priority: ec.Priority, OnError: onErr, AddTool: a.addTool,
		Pending: a.rt.pauses.Host(a.Agent), Secrets: secretsHost{a}, Grants: ec.Secrets, Workspace: a.rt.Workspace(),
		Peer: a.rt.peerExtension, AgentNames: a.rt.agents.names, HTTP: a.rt.obs.tel.HTTP(ec.Name),
		OpenModel: func(key string) (string, error) { return a.openExtensionModel(o, ec, key) },
	})
	if a.exts == nil {
		a.exts = map[string]extensions.Extension{}
	}
	if ec.Wasm == "" {
		a.exts[ec.Name] = ext
	}
	a.apis = append(a.apis, api)
	if c, ok := ext.(extensions.Closer); ok {
		a.closers = append(a.closers, c)
	}
	if err := ext.Register(api); err != nil {
		return fmt.Errorf("extension %q: %w", ec.Name, err)
	}
	return nil
}

// peerExtension is extensions.Host.Peer: agents are built one after the
// other, so an agent built later is found only once New has returned,
// which is when turns run.
func (r *Runtime) peerExtension(agent, name string) (extensions.Extension, bool) {
	a, ok := r.agents.byName[agent]
	if !ok {
		return nil, false
	}
	x, ok := a.exts[name]
	return x, ok
}

// addTool adds a tool an extension registers.
func (a *agent) addTool(t pipeline.Tool) error {
	if err := t.Validate(); err != nil {
		return err
	}
	if slices.ContainsFunc(a.Tools, func(x pipeline.Tool) bool { return x.Name == t.Name }) {
		return fmt.Errorf("agent %q already has a tool %q", a.Name, t.Name)
	}
	a.Tools = append(a.Tools, t)
	a.live(t.Name)
	return nil
}

// live marks tool name as code under test (engine.Agent.Live).
func (a *agent) live(name string) {
	if a.Live == nil {
		a.Live = map[string]bool{}
	}
	a.Live[name] = true
}

func (a *agent) layerSkipped(sk pipeline.Skip) {
	a.Logger.Warn("fail_open middleware failed; skipped", "instance", sk.InstanceKey, "turn", sk.TurnID,
		"extension", sk.Owner.Extension, "hook", sk.Hook.String(), "err", sk.Err)
	if a.rt.env.Bus.Active() {
		a.rt.env.Bus.Publish(events.Event{Topic: events.LayerSkipped, Agent: a.Name, Instance: sk.InstanceKey, TurnID: sk.TurnID, Source: "runtime",
			Data: events.LayerSkippedData{Extension: sk.Owner.Extension, Hook: sk.Hook.String(), Error: sk.Err.Error()}})
	}
}

func (a *agent) close() error {
	var errs []error
	for _, api := range a.apis {
		api.Events.Close()
	}
	for _, c := range a.closers {
		errs = append(errs, c.Close())
	}
	a.apis, a.closers = nil, nil
	return errors.Join(errs...)
}

// positioned reports whether err points into the config file (as an
// extension's config.Decode error does), so that it must not be prefixed:
// its first line starts with file:line:col.
func positioned(err error) bool {
	var ce *config.Error
	return errors.As(err, &ce)
}
