package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions/approval"
	"github.com/ganglion-dev/ganglion/extensions/protocol"
	"github.com/ganglion-dev/ganglion/ledger"
	"github.com/ganglion-dev/ganglion/pipeline"
)

// What an MCP call does when its agent pauses. The call waits for its
// instance's work to end: the answer of its turn, or of the delegations
// the turn made, however deep. When that work stops short because an
// agent in it waits for a human, the call looks at what it waits for: the
// open items of its instance and of every instance a task of its tree
// works on (items of other calls are none of its business). What the
// client may be asked (elicitable) it asks, one item at a time, and the
// answer resumes the work within the call; what is left is the call's
// result, with the commands that answer each item.
//
// A client on a protocol older than multi round-trip (2026-07-28) is asked
// with an elicitation request during the call. A newer client is asked in
// the call's result (InputRequests); it answers by calling again with the
// answers (InputResponses) and the call's RequestState, which the call
// takes up where it stopped.

// maxElicitations bounds how many times one call asks the client.
const maxElicitations = 8

// multiRoundTrip is the protocol version from which a server asks the
// client in its result rather than with a request of its own.
const multiRoundTrip = "2026-07-28"

// mcpCall is one tool call in progress.
type mcpCall struct {
	m          *mcpAgents
	c          *conversation
	req        *mcp.CallToolRequest
	agent, key string
	// sent says the call sent its message; when it did not (its
	// instance still worked on an earlier one), the answer says so.
	sent bool
}

// settle waits for the end of the instance's work and returns its answer,
// asking the client for what the work waits for when it may; round counts
// what the call asked already, note says why the last answer was refused.
func (cl *mcpCall) settle(ctx context.Context, round int, note string) *mcp.CallToolResult {
	m := cl.m
	for {
		changed := m.changes()
		if r := cl.answer(); r != nil {
			return r
		}
		if err := m.rt.WaitTasks(ctx); err != nil {
			return cl.gaveUp(err)
		}
		if r := cl.answer(); r != nil {
			return r
		}
		items, err := waitingItems(ctx, m.rt, cl.agent, cl.key)
		if err != nil {
			cl.c.returned()
			return toolError(err.Error())
		}
		if len(items) == 0 {
			if err := m.waitChange(ctx, changed); err != nil {
				return cl.gaveUp(err)
			}
			continue
		}
		i := -1
		if round < maxElicitations && cl.canElicit() {
			i = slices.IndexFunc(items, func(it ledger.Item) bool { _, ok := elicitation(it, ""); return ok })
		}
		if i < 0 {
			cl.c.returned()
			return cl.paused(items)
		}
		it := items[i]
		params, _ := elicitation(it, note)
		round++
		if cl.roundTrips() {
			cl.c.returned()
			state, _ := json.Marshal(elicitState{Round: round, Asked: []string{it.ID}, Unsent: !cl.sent})
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{it.ID: params}, RequestState: statePrefix + string(state)}
		}
		res, err := cl.req.Session.Elicit(ctx, params)
		if err != nil {
			m.logger.Warn("mcp: asking the client failed", "agent", it.Agent, "instance", it.Instance, "item", it.ID, "err", err)
			cl.c.returned()
			return cl.paused(items)
		}
		acted, refused := cl.apply(ctx, it, res)
		if !acted && refused == "" {
			cl.c.returned()
			return cl.paused(items)
		}
		note = refused
	}
}

// statePrefix marks the RequestState of a call that asked the client.
const statePrefix = "ganglion-elicit:"

// elicitState is what a call that asked the client in its result needs
// when the client calls again: how many times it asked, and which items.
// The client may change it: each answer is checked against the items the
// call waits for then.
type elicitState struct {
	Round int      `json:"round"`
	Asked []string `json:"asked"`
	// Unsent says the call did not send its message (see mcpCall.sent).
	Unsent bool `json:"unsent,omitempty"`
}

// again takes up a call whose result asked the client: it applies the
// client's answers and goes on.
func (cl *mcpCall) again(ctx context.Context) *mcp.CallToolResult {
	var st elicitState
	raw, ok := strings.CutPrefix(cl.req.Params.RequestState, statePrefix)
	if !ok || json.Unmarshal([]byte(raw), &st) != nil || st.Round < 1 || st.Round > maxElicitations {
		return toolError(`the call's "requestState" is not one this server gave: call without it`)
	}
	cl.sent = !st.Unsent
	cl.c.watch() // before the answers resume the agent
	items, err := waitingItems(ctx, cl.m.rt, cl.agent, cl.key)
	if err != nil {
		return toolError(err.Error())
	}
	note := ""
	for _, id := range st.Asked {
		res, ok := cl.req.Params.InputResponses[id].(*mcp.ElicitResult)
		i := slices.IndexFunc(items, func(it ledger.Item) bool { return it.ID == id })
		if !ok || i < 0 {
			continue // answered meanwhile, or not this call's
		}
		if _, ok := elicitation(items[i], ""); !ok {
			continue // never asked for through the client
		}
		acted, refused := cl.apply(ctx, items[i], res)
		if !acted && refused == "" {
			cl.c.returned()
			return cl.paused(items)
		}
		note = refused
	}
	return cl.settle(ctx, st.Round, note)
}

// answer returns the call's result if its instance's work ended.
func (cl *mcpCall) answer() *mcp.CallToolResult {
	ev := cl.c.take()
	if ev == nil {
		return nil
	}
	d := ev.Data.(events.TurnFinishedData)
	var r *mcp.CallToolResult
	switch {
	case d.Error != "":
		r = toolError(d.Error)
	case d.FinishReason == pipeline.FinishAborted, d.FinishReason == pipeline.FinishError:
		r = toolError(fmt.Sprintf("the agent's turn ended %s", d.FinishReason))
	default:
		r = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: d.Response}}}
	}
	if !cl.sent {
		r.Content = append(r.Content, &mcp.TextContent{Text: "(That is the agent's answer to the message that paused it, given once its pause was answered. " +
			"This call's message was not sent: send it again if it asks something new.)"})
	}
	return r
}

// gaveUp is the result of a call that stopped waiting (err: its context
// ended): the next call returns the answer.
func (cl *mcpCall) gaveUp(err error) *mcp.CallToolResult {
	cl.c.returned()
	return toolError(fmt.Sprintf("%s/%s: stopped waiting for the answer (%v): call again with the same instance for it", cl.agent, cl.key, err))
}

// canElicit reports whether the client takes elicitations in a form.
func (cl *mcpCall) canElicit() bool {
	caps := cl.req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	// Neither mode declared means a form, as before modes existed.
	return caps.Elicitation.Form != nil || caps.Elicitation.URL == nil
}

// roundTrips reports whether the client is asked in the call's result
// (multi round-trip) rather than with a request of the server's, as the
// SDK decides it.
func (cl *mcpCall) roundTrips() bool {
	v := mcp.SupportedProtocolVersions()[0]
	if p := cl.req.Session.InitializeParams(); p != nil {
		v = p.ProtocolVersion
	}
	return v >= multiRoundTrip
}

// elicitation returns the form that asks the client for it, with note
// (why the last answer was refused) first; false for an item the client
// is never asked for: a dependency whose value is secret, or of a type or
// kind this does not know. The MCP specification forbids asking for
// sensitive information: only the dependency types whose values the
// model reads anyway (a file, a permission, a package) are asked.
func elicitation(it ledger.Item, note string) (*mcp.ElicitParams, bool) {
	who := it.Agent + "/" + it.Instance
	str := func(title, desc string) map[string]any {
		p := map[string]any{"type": "string", "title": title}
		if desc != "" {
			p["description"] = desc
		}
		return p
	}
	form := func(required bool, name string, prop map[string]any, more ...any) map[string]any {
		props := map[string]any{name: prop}
		for i := 0; i+1 < len(more); i += 2 {
			props[more[i].(string)] = more[i+1]
		}
		s := map[string]any{"type": "object", "properties": props}
		if required {
			s["required"] = []string{name}
		}
		return s
	}
	var msg string
	var schema map[string]any
	switch it.Kind {
	case protocol.ItemQuestion:
		var q protocol.Question
		if json.Unmarshal(it.Request, &q) != nil {
			return nil, false
		}
		p := str("Answer", "")
		if len(q.Options) > 0 {
			p["enum"] = q.Options
		}
		if q.Default != "" {
			p["default"] = q.Default
		}
		msg, schema = who+" asks: "+describe(it), form(q.Required, "answer", p)
	case approval.ItemApproval:
		p := str("Decision", "approve runs the call; reject does not, and the agent reads your reason")
		p["enum"] = []string{"approve", "reject"}
		msg = who + " wants to call " + describe(it)
		schema = form(true, "decision", p, "reason", str("Reason", "why you reject the call, for the agent"))
	case protocol.ItemDependency:
		var d protocol.DependencyRequest
		if json.Unmarshal(it.Request, &d) != nil {
			return nil, false
		}
		var p map[string]any
		switch d.Type {
		case protocol.TypeFile:
			p = str("File", "its path in the agent's workspace")
		case protocol.TypePackage:
			p = str("Package", "an npm package name")
		case protocol.TypePermission:
			p = map[string]any{"type": "boolean", "title": "Permission"}
		default:
			return nil, false // secret, or a type this does not know
		}
		msg, schema = who+" needs "+describe(it), form(d.Required, "value", p)
	case protocol.ItemIntervention, approval.ItemMistakes, approval.ItemRepetition:
		msg, schema = who+": "+describe(it), form(true, "guidance", str("Guidance", "what the agent is to do"))
	default:
		return nil, false
	}
	if note != "" {
		msg = note + "\n" + msg
	}
	return &mcp.ElicitParams{Message: msg, RequestedSchema: schema}, true
}

// apply resolves it as the client's res says. acted says it was resolved
// (or was by someone else meanwhile); refused is why the answer was
// refused, to ask again with. Neither: the client declined or cancelled,
// and it stays open. Declining an optional question skips it; declining
// an optional dependency rejects it.
func (cl *mcpCall) apply(ctx context.Context, it ledger.Item, res *mcp.ElicitResult) (acted bool, refused string) {
	rt := cl.m.rt
	var err error
	switch {
	case res.Action == "accept":
		err = cl.m.resolve(ctx, it, res.Content)
	case res.Action == "decline" && it.Kind == protocol.ItemQuestion && !it.Required:
		_, err = rt.Skip(ctx, it.ID)
	case res.Action == "decline" && it.Kind == protocol.ItemDependency && !it.Required:
		_, err = rt.Reject(ctx, it.ID, "declined in the MCP client")
	default:
		return false, ""
	}
	switch {
	case err == nil, errors.Is(err, ledger.ErrResolved):
	case isInvalid(err):
		return false, "That answer was refused: " + err.Error()
	default:
		// The turn the answer resumed failed: its end comes as an event.
		cl.m.logger.Warn("mcp: the answer's resume failed", "agent", it.Agent, "instance", it.Instance, "item", it.ID, "err", err)
	}
	return true, ""
}

// resolve gives it the answer the client's form holds.
func (m *mcpAgents) resolve(ctx context.Context, it ledger.Item, form map[string]any) error {
	text := func(k string) string { s, _ := form[k].(string); return s }
	var err error
	switch it.Kind {
	case protocol.ItemQuestion:
		if a := text("answer"); a == "" && !it.Required {
			_, err = m.rt.Skip(ctx, it.ID)
		} else {
			_, err = m.rt.Answer(ctx, it.ID, a)
		}
	case approval.ItemApproval:
		switch text("decision") {
		case "approve":
			_, err = m.rt.Answer(ctx, it.ID, "approve")
		case "reject":
			_, err = m.rt.Reject(ctx, it.ID, text("reason"))
		default:
			_, err = m.rt.Answer(ctx, it.ID, text("decision")) // refused, and says why
		}
	case protocol.ItemDependency:
		v := text("value")
		if b, ok := form["value"].(bool); ok {
			v = strconv.FormatBool(b)
		}
		_, err = m.rt.Provide(ctx, it.ID, v)
	default:
		_, err = m.rt.Answer(ctx, it.ID, text("guidance"))
	}
	return err
}

// pendingItem is an item of a paused result's structured content.
type pendingItem struct {
	ID       string          `json:"id"`
	Kind     string          `json:"kind"`
	Agent    string          `json:"agent"`
	Instance string          `json:"instance"`
	Request  json.RawMessage `json:"request"`
	Answer   string          `json:"answer"`
	Secret   bool            `json:"secret,omitempty"`
}

// paused is the result of a call that returns while its instance waits
// for items: each with the commands that answer it, which reach this
// server; a secret also with where the HTTP API takes it.
func (cl *mcpCall) paused(items []ledger.Item) *mcp.CallToolResult {
	m := cl.m
	m.mu.Lock()
	api, tokenFile := m.api, m.tokenFile
	m.mu.Unlock()
	var b strings.Builder
	b.WriteString("The agent paused: it waits for a human.\n")
	open := []pendingItem{}
	for _, it := range items {
		how := howToAnswer(it, m.where)
		fmt.Fprintf(&b, "- %s: %s of %s/%s: %s\n  %s\n", it.ID, kindName(it.Kind), it.Agent, it.Instance, describe(it), how)
		_, asked := elicitation(it, "")
		secret := it.Kind == protocol.ItemDependency && !asked
		if secret {
			b.WriteString("  It is a secret, never asked for here: provide it in a terminal with the command above")
			if api != "" {
				fmt.Fprintf(&b, ", or with POST %s/v1/pending/%s/provide and the token in %s", api, it.ID, tokenFile)
			}
			b.WriteString(".\n")
		}
		open = append(open, pendingItem{ID: it.ID, Kind: it.Kind, Agent: it.Agent, Instance: it.Instance, Request: it.Request, Answer: how, Secret: secret})
	}
	if !cl.sent {
		b.WriteString("This call's message was not sent: the agent still works on the message that paused it.\n")
	}
	it := "it is"
	if len(items) > 1 {
		it = "they are"
	}
	fmt.Fprintf(&b, "Once %s answered, call this tool again with the same instance (%s): that call returns the agent's answer, and does not send its message.\n", it, strconv.Quote(cl.key))
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}},
		StructuredContent: map[string]any{"status": "paused", "agent": cl.agent, "instance": cl.key, "message_sent": cl.sent, "pending": open}}
}

// kindName names an item's kind with its article.
func kindName(kind string) string {
	switch kind {
	case protocol.ItemQuestion:
		return "a question"
	case protocol.ItemDependency:
		return "a dependency"
	case approval.ItemApproval:
		return "an approval"
	case protocol.ItemIntervention, approval.ItemMistakes, approval.ItemRepetition:
		return "a call for guidance"
	}
	return "an item of kind " + kind
}
