package protocol

// The payloads of the events the extension publishes. Their fields are in
// the order of their JSON names, which is the order they were published in
// when they were maps.

// BlockEvent is the data of the "protocol.block" event: a valid block of
// a kind the extension does not pause on (PHASE_COMPLETE, or a kind an app
// registered), for the app to act on. Value is what the kind's Build
// returned, as for [Block].
type BlockEvent struct {
	Kind   string `json:"kind"`
	Line   int    `json:"line"`
	Step   int    `json:"step"`
	TurnID string `json:"turn_id"`
	Value  any    `json:"value"`
}

// MistakeEvent is the data of the "protocol.mistake" event: the model's
// blocks had problems, and Count is how many times in a row.
type MistakeEvent struct {
	Count  int      `json:"count"`
	Errors []string `json:"errors"`
	Step   int      `json:"step"`
	TurnID string   `json:"turn_id"`
}
