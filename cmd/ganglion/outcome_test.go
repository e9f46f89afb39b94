package main

import (
	"encoding/json"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions/approval"
	"github.com/ganglion-dev/ganglion/extensions/protocol"
	"github.com/ganglion-dev/ganglion/ledger"
)

// TestOutcomes: what the CLI says became of an item, for every cell of
// the outcomes table (each kind, each status, required and optional),
// exactly; and no cell goes untested.
func TestOutcomes(t *testing.T) {
	asJSON := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		must(t, err)
		return b
	}
	question := func(required bool, def string) json.RawMessage {
		return asJSON(protocol.Question{Category: "clarification", Question: "What pricing model?", Default: def, Required: required})
	}
	dependency := func(required bool) json.RawMessage {
		return asJSON(protocol.DependencyRequest{Type: protocol.TypeAPIKey, Name: "OPENAI_API_KEY", Description: "for OpenAI", Required: required})
	}
	call := json.RawMessage(`{"tool":"execute_command","args":{"command":"ls"},"calls":3,"failures":3}`)
	const (
		depRejected = "required dependency OPENAI_API_KEY was rejected: we have no key"
		depTimedOut = "required dependency OPENAI_API_KEY was not provided in time"
		stopped     = "stopped after 3 calls in a row of execute_command with the same arguments: it loops"
	)
	tests := []struct {
		name string
		it   ledger.Item
		want string
	}{
		{"question answered, required", ledger.Item{Kind: protocol.ItemQuestion, Status: ledger.Answered, Required: true, Request: question(true, ""), Answer: "Freemium"},
			"answered: Freemium"},
		{"question answered, optional", ledger.Item{Kind: protocol.ItemQuestion, Status: ledger.Answered, Request: question(false, "Freemium"), Answer: "Ad-based"},
			"answered: Ad-based"},
		{"question skipped, with a default", ledger.Item{Kind: protocol.ItemQuestion, Status: ledger.Skipped, Request: question(false, "Freemium"), Answer: "Freemium"},
			"skipped: the agent goes on with the default: Freemium"},
		{"question skipped, without a default", ledger.Item{Kind: protocol.ItemQuestion, Status: ledger.Skipped, Request: question(false, "")},
			"skipped: it has no default, so the agent decides"},
		{"question timed out, required", ledger.Item{Kind: protocol.ItemQuestion, Status: ledger.Timeout, Required: true, Open: true, Request: question(true, "")},
			"timed out: nobody answered; the question is required, so it still waits for its answer"},
		{"question timed out, optional, with a default", ledger.Item{Kind: protocol.ItemQuestion, Status: ledger.Timeout, Request: question(false, "Freemium"), Answer: "Freemium"},
			"timed out: nobody answered; the agent goes on with the default: Freemium"},
		{"question timed out, optional, without a default", ledger.Item{Kind: protocol.ItemQuestion, Status: ledger.Timeout, Request: question(false, "")},
			"timed out: nobody answered; it has no default, so the agent decides"},

		{"dependency provided, required", ledger.Item{Kind: protocol.ItemDependency, Status: ledger.Provided, Required: true, Request: dependency(true)},
			"provided: OPENAI_API_KEY (api_key)"},
		{"dependency provided, optional", ledger.Item{Kind: protocol.ItemDependency, Status: ledger.Provided, Request: dependency(false)},
			"provided: OPENAI_API_KEY (api_key)"},
		{"dependency rejected, required", ledger.Item{Kind: protocol.ItemDependency, Status: ledger.Rejected, Required: true, Request: dependency(true), Fails: true, Reason: depRejected},
			"rejected: the dependency OPENAI_API_KEY was required, so the agent's task failed: " + depRejected},
		{"dependency rejected, optional", ledger.Item{Kind: protocol.ItemDependency, Status: ledger.Rejected, Request: dependency(false), Reason: "we have no key"},
			"rejected: the dependency OPENAI_API_KEY is optional, so the agent goes on without it"},
		{"dependency timed out, required", ledger.Item{Kind: protocol.ItemDependency, Status: ledger.Timeout, Required: true, Request: dependency(true), Fails: true, Reason: depTimedOut},
			"timed out: nobody provided the dependency OPENAI_API_KEY; it was required, so the agent's task failed: " + depTimedOut},
		{"dependency timed out, optional", ledger.Item{Kind: protocol.ItemDependency, Status: ledger.Timeout, Request: dependency(false)},
			"timed out: nobody provided the dependency OPENAI_API_KEY; it is optional, so the agent goes on without it"},

		{"intervention answered", ledger.Item{Kind: protocol.ItemIntervention, Status: ledger.Answered, Required: true, Answer: "close every block"},
			"answered: the model reads your guidance on its protocol blocks"},
		{"intervention timed out", ledger.Item{Kind: protocol.ItemIntervention, Status: ledger.Timeout, Required: true, Open: true},
			"timed out: nobody guided the model; it still waits for guidance"},

		{"approval approved", ledger.Item{Kind: approval.ItemApproval, Status: ledger.Answered, Required: true, Request: call, Answer: "approve"},
			"approved: execute_command runs"},
		{"approval approved with an edit", ledger.Item{Kind: approval.ItemApproval, Status: ledger.Answered, Required: true, Request: call,
			Answer: `edit {"command":"echo a > b && cat < b"}`},
			`approved: execute_command runs with the arguments you edited: {"command":"echo a > b && cat < b"}`},
		{"approval denied", ledger.Item{Kind: approval.ItemApproval, Status: ledger.Rejected, Required: true, Request: call, Answer: "deny", Reason: "not now"},
			"denied: execute_command does not run"},
		{"approval timed out", ledger.Item{Kind: approval.ItemApproval, Status: ledger.Timeout, Required: true, Request: call, Answer: "timeout"},
			"timed out: nobody approved the call, so execute_command does not run"},

		{"mistakes answered", ledger.Item{Kind: approval.ItemMistakes, Status: ledger.Answered, Required: true, Request: call, Answer: "use ls -a"},
			"answered: the model reads your guidance after the failed calls of execute_command"},
		{"mistakes rejected", ledger.Item{Kind: approval.ItemMistakes, Status: ledger.Rejected, Required: true, Request: call, Fails: true,
			Reason: "stopped after 3 failed tool calls in a row: enough"},
			"rejected: the agent was stopped, so its task failed: stopped after 3 failed tool calls in a row: enough"},
		{"mistakes timed out", ledger.Item{Kind: approval.ItemMistakes, Status: ledger.Timeout, Required: true, Request: call},
			"timed out: nobody guided the model; it goes on after the failed calls of execute_command"},

		{"repetition answered", ledger.Item{Kind: approval.ItemRepetition, Status: ledger.Answered, Required: true, Request: call, Answer: "stop listing"},
			"answered: the repeated call of execute_command does not run; the model reads your guidance"},
		{"repetition rejected", ledger.Item{Kind: approval.ItemRepetition, Status: ledger.Rejected, Required: true, Request: call, Fails: true, Reason: stopped},
			"rejected: the agent was stopped, so its task failed: " + stopped},
		{"repetition timed out", ledger.Item{Kind: approval.ItemRepetition, Status: ledger.Timeout, Required: true, Request: call},
			"timed out: nobody guided the model; the repeated call of execute_command does not run"},

		{"another kind answered", ledger.Item{Kind: "vote", Status: ledger.Answered, Answer: "yes"}, "answered"},
		{"another kind provided", ledger.Item{Kind: "vote", Status: ledger.Provided}, "provided"},
		{"another kind rejected, failing its task", ledger.Item{Kind: "vote", Status: ledger.Rejected, Fails: true, Reason: "vote refused"},
			"rejected, so the agent's task failed: vote refused"},
		{"another kind skipped", ledger.Item{Kind: "vote", Status: ledger.Skipped}, "skipped"},
		{"another kind timed out", ledger.Item{Kind: "vote", Status: ledger.Timeout, Reason: "no answer by 2026-01-02T03:04:05Z"},
			"timed out: nobody answered in time"},
		{"another kind failed", ledger.Item{Kind: "vote", Status: ledger.Failed, Fails: true, Reason: "its extension is gone"},
			"failed: it can no longer be answered, so the agent's task failed: its extension is gone"},
		{"another kind still open", ledger.Item{Kind: "vote", Status: ledger.Pending, Open: true}, "is still open"},
		{"a status no kind knows", ledger.Item{Kind: "vote", Status: "withdrawn"}, "withdrawn"},
	}
	used := map[outcomeKey]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.it.ID, tt.it.Agent, tt.it.Instance = "p-0123456789ab", "keeper", "default"
			used[outcomeCell(tt.it)] = true
			if got, want := outcome(tt.it), "p-0123456789ab of keeper/default "+tt.want; got != want {
				t.Errorf("outcome:\n got %q\nwant %q", got, want)
			}
		})
	}
	for k := range outcomes {
		if !used[k] {
			t.Errorf("no case for the cell %+v", k)
		}
	}
}
