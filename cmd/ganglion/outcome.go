package main

import (
	"encoding/json"
	"strings"

	"github.com/ganglion-dev/ganglion/extensions/approval"
	"github.com/ganglion-dev/ganglion/extensions/protocol"
	"github.com/ganglion-dev/ganglion/ledger"
)

// need says for which items of a kind an outcome's words hold.
type need int

const (
	either   need = iota // required and optional items alike
	required             // required items only
	optional             // optional items only
)

// outcomeKey is a cell of the outcomes table.
type outcomeKey struct {
	kind   string // "" for a kind the table does not know
	status ledger.Status
	need   need
}

// outcomes is what the CLI says became of a pending item, for each kind,
// each status it can end in, and, where it changes the outcome, whether
// the item was required. The words after the status are filled from the
// item (see outcome):
//
//	{answer}   the answer given (a question's, the guidance)
//	{default}  what a question without an answer goes on with
//	{name}     a dependency's name; {type} its type
//	{tool}     the tool of the call that paused
//	{runs}     an approved call running, with the edited arguments if any
//	{reason}   why the task failed, as the kind says it
//	{failed}   for a kind the table does not know: that the task failed
//
// A kind the table does not know (a WebAssembly extension's own) gets
// the row of "". Secrets are never in an item, so never in these words.
var outcomes = map[outcomeKey]string{
	{protocol.ItemQuestion, ledger.Answered, either}: "answered: {answer}",
	{protocol.ItemQuestion, ledger.Skipped, either}:  "skipped: {default}",
	{protocol.ItemQuestion, ledger.Timeout, required}: "timed out: nobody answered; the question is required, " +
		"so it still waits for its answer",
	{protocol.ItemQuestion, ledger.Timeout, optional}: "timed out: nobody answered; {default}",

	{protocol.ItemDependency, ledger.Provided, either}: "provided: {name} ({type})",
	{protocol.ItemDependency, ledger.Rejected, required}: "rejected: the dependency {name} was required, " +
		"so the agent's task failed: {reason}",
	{protocol.ItemDependency, ledger.Rejected, optional}: "rejected: the dependency {name} is optional, " +
		"so the agent goes on without it",
	{protocol.ItemDependency, ledger.Timeout, required}: "timed out: nobody provided the dependency {name}; " +
		"it was required, so the agent's task failed: {reason}",
	{protocol.ItemDependency, ledger.Timeout, optional}: "timed out: nobody provided the dependency {name}; " +
		"it is optional, so the agent goes on without it",

	{protocol.ItemIntervention, ledger.Answered, either}: "answered: the model reads your guidance on its protocol blocks",
	{protocol.ItemIntervention, ledger.Timeout, either}:  "timed out: nobody guided the model; it still waits for guidance",

	{approval.ItemApproval, ledger.Answered, either}: "approved: {runs}",
	{approval.ItemApproval, ledger.Rejected, either}: "denied: {tool} does not run",
	{approval.ItemApproval, ledger.Timeout, either}:  "timed out: nobody approved the call, so {tool} does not run",

	{approval.ItemMistakes, ledger.Answered, either}: "answered: the model reads your guidance after the failed calls of {tool}",
	{approval.ItemMistakes, ledger.Rejected, either}: "rejected: the agent was stopped, so its task failed: {reason}",
	{approval.ItemMistakes, ledger.Timeout, either}:  "timed out: nobody guided the model; it goes on after the failed calls of {tool}",

	{approval.ItemRepetition, ledger.Answered, either}: "answered: the repeated call of {tool} does not run; " +
		"the model reads your guidance",
	{approval.ItemRepetition, ledger.Rejected, either}: "rejected: the agent was stopped, so its task failed: {reason}",
	{approval.ItemRepetition, ledger.Timeout, either}: "timed out: nobody guided the model; the repeated call of " +
		"{tool} does not run",

	{"", ledger.Answered, either}: "answered{failed}",
	{"", ledger.Provided, either}: "provided{failed}",
	{"", ledger.Rejected, either}: "rejected{failed}",
	{"", ledger.Skipped, either}:  "skipped{failed}",
	{"", ledger.Timeout, either}:  "timed out: nobody answered in time{failed}",
	{"", ledger.Failed, either}:   "failed: it can no longer be answered{failed}",
	{"", ledger.Pending, either}:  "is still open",
}

// outcome says what became of it, in one line for people: its ID, agent
// and instance, then the cell of outcomes for its kind and status.
func outcome(it ledger.Item) string {
	text, ok := outcomes[outcomeCell(it)]
	if !ok {
		text = string(it.Status) + "{failed}"
	}
	var req struct {
		Tool    string          `json:"tool"`
		Name    string          `json:"name"`
		Type    string          `json:"type"`
		Default string          `json:"default"`
		Args    json.RawMessage `json:"args"`
	}
	_ = json.Unmarshal(it.Request, &req) // a field it lacks stays empty
	def := "it has no default, so the agent decides"
	if it.Answer != "" {
		def = "the agent goes on with the default: " + it.Answer
	}
	runs := req.Tool + " runs"
	// The approval kind stores an edit as "edit " and the arguments.
	if args, ok := strings.CutPrefix(it.Answer, "edit "); ok {
		runs = req.Tool + " runs with the arguments you edited: " + readableJSON(json.RawMessage(args))
	}
	failed := ""
	if it.Fails {
		failed = ", so the agent's task failed: " + it.Reason
	}
	text = strings.NewReplacer(
		"{answer}", it.Answer, "{default}", def, "{name}", req.Name, "{type}", req.Type,
		"{tool}", req.Tool, "{runs}", runs, "{reason}", it.Reason, "{failed}", failed,
	).Replace(text)
	return it.ID + " of " + it.Agent + "/" + it.Instance + " " + text
}

// outcomeCell returns the cell of outcomes that words it: its kind's for
// its status and need, else its kind's for either, else the row of "".
func outcomeCell(it ledger.Item) outcomeKey {
	n := optional
	if it.Required {
		n = required
	}
	for _, k := range []outcomeKey{{it.Kind, it.Status, n}, {it.Kind, it.Status, either}} {
		if _, ok := outcomes[k]; ok {
			return k
		}
	}
	return outcomeKey{"", it.Status, either}
}
