package main

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	ganglion "github.com/ganglion-dev/ganglion/sdk"
)

var spec = ganglion.ToolSpec{
	Name:        "word_count",
	Description: "Counts the words of a text: the runs of characters between white space.",
	Parameters: json.RawMessage(`{
		"type": "object",
		"properties": {"text": {"type": "string", "description": "The text to count."}},
		"required": ["text"],
		"additionalProperties": false
	}`),
	Category: ganglion.CategoryRead,
}

func init() {
	ganglion.Register(ganglion.Manifest{Name: "tool", Version: "1.0.0"}, setup)
}

func setup(api *ganglion.API) error {
	return api.Tools.Register(spec, wordCount)
}

func wordCount(c *ganglion.ToolCall) (ganglion.ToolResult, error) {
	var args struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(c.Args(), &args); err != nil {
		return ganglion.ToolResult{}, err
	}
	if strings.TrimSpace(args.Text) == "" {
		return ganglion.ToolResult{}, errors.New("word_count: the text is empty")
	}
	n := len(strings.Fields(args.Text))
	return ganglion.ToolResult{Content: strconv.Itoa(n)}, nil
}

func main() {}
