package engine

import (
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/tokens"
)

// CountTokens counts a message the way chat APIs bill it, near enough: its
// content, its tool calls' names and arguments, and a few tokens of
// framing, in enc, the agent's model's encoding.
func CountTokens(enc *tokens.Encoding, m *pipeline.Message) int {
	n := 4
	count := func(s string) {
		if s != "" {
			n += enc.Count(s)
		}
	}
	count(m.Content)
	for _, c := range m.ToolCalls {
		count(c.Name)
		count(string(c.Arguments))
		n += 3
	}
	return n
}
