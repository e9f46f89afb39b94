package approval

// The payloads of the events the extension publishes. Their fields are in
// the order of their JSON names, which is the order they were published in
// when they were maps.

// DecidedEvent is the data of the "approval.decided" event, one per tool
// call: the decision, the rules that matched, and why.
type DecidedEvent struct {
	CallID      string   `json:"call_id"`
	Decision    Decision `json:"decision"`
	Explanation string   `json:"explanation"`
	Matched     []Match  `json:"matched"`
	Tool        string   `json:"tool"`
	TurnID      string   `json:"turn_id"`
}

// RuleErrorEvent is the data of the "approval.rule_error" event: a rule
// failed to evaluate for a call, and counted as deny.
type RuleErrorEvent struct {
	Error  string `json:"error"`
	Tool   string `json:"tool"`
	TurnID string `json:"turn_id"`
}

// ReloadFailedEvent is the data of the "approval.reload_failed" event: the
// rules file changed but could not be loaded; the rules in force stay.
type ReloadFailedEvent struct {
	Error string `json:"error"`
	File  string `json:"file"`
}

// MistakeLimitEvent is the data of the "approval.mistake_limit" event: a
// tool failed Failures times in a row, and the call waits for a human.
type MistakeLimitEvent struct {
	Failures int    `json:"failures"`
	Tool     string `json:"tool"`
	TurnID   string `json:"turn_id"`
}

// RepetitionLimitEvent is the data of the "approval.repetition_limit"
// event: the model called Tool with the same arguments Calls times in a
// row, and the last call waits, not run, for a human's guidance.
type RepetitionLimitEvent struct {
	CallID string `json:"call_id"`
	Calls  int    `json:"calls"`
	Tool   string `json:"tool"`
	TurnID string `json:"turn_id"`
}
