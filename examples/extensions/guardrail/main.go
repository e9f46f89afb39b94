package main

import (
	"fmt"
	"regexp"

	ganglion "github.com/ganglion-dev/ganglion/sdk"
)

// config is the extension's config: section.
type config struct {
	Block []string `json:"block"` // regular expressions (Go syntax)
}

func init() {
	ganglion.Register(ganglion.Manifest{Name: "guardrail", Version: "1.0.0"}, setup)
}

func setup(api *ganglion.API) error {
	var cfg config
	if _, err := api.Config(&cfg); err != nil {
		return err
	}
	// A *ConfigError names the setting at fault: the host reports it at
	// that place of the agent's config file, with its line and column.
	if len(cfg.Block) == 0 {
		return &ganglion.ConfigError{Path: "$.block", Msg: "lists no pattern, so the guardrail would refuse nothing"}
	}
	var blocked []*regexp.Regexp
	for i, p := range cfg.Block {
		re, err := regexp.Compile(p)
		if err != nil {
			return &ganglion.ConfigError{Path: fmt.Sprintf("$.block[%d]", i), Msg: err.Error()}
		}
		blocked = append(blocked, re)
	}
	api.Pipeline.Turn(func(t *ganglion.Turn) error {
		m := ""
		for _, re := range blocked {
			if m = re.FindString(t.InputText()); m != "" {
				break
			}
		}
		if m == "" {
			return t.Next()
		}
		api.Logger.Warn("turn refused", "turn", t.TurnID(), "match", m)
		return t.SetResult(ganglion.TurnResult{
			FinishReason: ganglion.FinishText,
			Response:     ganglion.Message{Content: "I can't help with that: the request matches a blocked pattern (" + m + ")."},
		})
	}, ganglion.Priority(-100)) // outermost: refuse before any other layer runs
	return nil
}

func main() {}
