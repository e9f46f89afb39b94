package cassette

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// The scripted model's YAML, as far as Script writes it.
type (
	scriptFile struct {
		Agents yaml.MapSlice `yaml:"agents"`
	}
	scriptAgent struct {
		Turns []scriptTurn `yaml:"turns"`
	}
	scriptTurn struct {
		Steps []scriptStep `yaml:"steps"`
	}
	scriptStep struct {
		Reasoning string       `yaml:"reasoning,omitempty"`
		Text      string       `yaml:"text,omitempty"`
		ToolCalls []scriptCall `yaml:"tool_calls,omitempty"`
		Usage     *scriptUsage `yaml:"usage,omitempty"`
		Error     string       `yaml:"error,omitempty"`
	}
	scriptUsage struct {
		InputTokens      int64 `yaml:"input_tokens"`
		OutputTokens     int64 `yaml:"output_tokens"`
		CacheReadTokens  int64 `yaml:"cache_read_tokens,omitempty"`
		CacheWriteTokens int64 `yaml:"cache_write_tokens,omitempty"`
	}
	scriptCall struct {
		Name      string `yaml:"name"`
		ID        string `yaml:"id,omitempty"`
		Arguments string `yaml:"arguments"`
	}
)

// Script returns the model's answers of the recording as a script of the
// scripted model (provider scripted), to edit by hand: for each agent,
// its turns in order, each with the steps the model answered. A turn
// that never reached the model (a middleware answered it) gets a
// placeholder entry, so that the turns after it keep their numbers.
//
// The scripted model keys answers by agent and turn number, so a script
// holds one instance's conversation an agent: the first the recording
// has. What it cannot hold (other instances, the models extensions
// opened, a step's calls past the first) is named in comments at the top.
func (c *Cassette) Script() []byte {
	type agentCalls struct {
		instance string
		turns    map[int][]*call // by turn number, the calls of each step in order
	}
	var (
		order  []string
		agents = map[string]*agentCalls{}
		left   []string
	)
	for _, cl := range c.calls {
		l := cl.line
		if l.Model != "" {
			left = append(left, fmt.Sprintf("the call of model %q of agent %q %s step %d", l.Model, l.Agent, l.TurnID, l.Step))
			continue
		}
		a := agents[l.Agent]
		if a == nil {
			a = &agentCalls{instance: l.Instance, turns: map[int][]*call{}}
			agents[l.Agent] = a
			order = append(order, l.Agent)
		}
		if l.Instance != a.instance {
			left = append(left, fmt.Sprintf("agent %q instance %q %s step %d (the script holds instance %q)", l.Agent, l.Instance, l.TurnID, l.Step, a.instance))
			continue
		}
		n, err := strconv.Atoi(strings.TrimPrefix(l.TurnID, "turn-"))
		if err != nil || n < 1 {
			left = append(left, fmt.Sprintf("agent %q %s step %d (not a numbered turn)", l.Agent, l.TurnID, l.Step))
			continue
		}
		steps := a.turns[n]
		if l.Step != len(steps)+1 {
			left = append(left, fmt.Sprintf("agent %q %s step %d (a call of a step already answered)", l.Agent, l.TurnID, l.Step))
			continue
		}
		a.turns[n] = append(steps, cl)
	}
	var f scriptFile
	for _, name := range order {
		a := agents[name]
		last := slices.Max(mapKeys(a.turns))
		var sa scriptAgent
		for n := 1; n <= last; n++ {
			calls := a.turns[n]
			if len(calls) == 0 {
				sa.Turns = append(sa.Turns, scriptTurn{Steps: []scriptStep{{Text: "(turn " + strconv.Itoa(n) + " did not reach the model)"}}})
				continue
			}
			var t scriptTurn
			for _, cl := range calls {
				t.Steps = append(t.Steps, scriptStepOf(cl))
			}
			sa.Turns = append(sa.Turns, t)
		}
		f.Agents = append(f.Agents, yaml.MapItem{Key: name, Value: sa})
	}
	var b bytes.Buffer
	b.WriteString("# The scripted model's answers, from a recorded session.\n")
	for _, l := range left {
		b.WriteString("# Left out: " + l + ".\n")
	}
	out, err := yaml.MarshalWithOptions(f, yaml.UseLiteralStyleIfMultiline(true))
	if err != nil { // the types above always marshal
		panic(err)
	}
	b.Write(out)
	return b.Bytes()
}

func mapKeys(m map[int][]*call) []int {
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// scriptStepOf is one recorded response as a step. Text and reasoning
// holding "{{" are escaped, as the scripted model reads them as
// templates.
func scriptStepOf(cl *call) scriptStep {
	var (
		s         scriptStep
		text, rsn strings.Builder
		usage     pipeline.Usage
		byID      = map[string]int{}
	)
	if cl.line.OpenError != nil {
		s.Error = cl.line.OpenError.Message
		return s
	}
	for _, ch := range cl.chunks {
		switch ch.Kind {
		case "text":
			text.WriteString(ch.Text)
		case "reasoning":
			rsn.WriteString(ch.Text)
		case "tool_call_start":
			byID[ch.ToolCallID] = len(s.ToolCalls)
			s.ToolCalls = append(s.ToolCalls, scriptCall{Name: ch.ToolName, ID: ch.ToolCallID})
		case "tool_call_delta":
			if i, ok := byID[ch.ToolCallID]; ok {
				s.ToolCalls[i].Arguments += ch.Arguments
			}
		case "usage":
			if ch.Usage != nil {
				usage = usage.Add(*ch.Usage)
			}
		case "error":
			if ch.Error != nil {
				s.Error = ch.Error.Message
			}
		}
	}
	s.Text, s.Reasoning = untemplate(text.String()), untemplate(rsn.String())
	if usage != (pipeline.Usage{}) || s.Text == "" && s.Reasoning == "" && len(s.ToolCalls) == 0 && s.Error == "" {
		// (A step must say something: an empty answer says its usage.)
		s.Usage = &scriptUsage{InputTokens: usage.InputTokens, OutputTokens: usage.OutputTokens,
			CacheReadTokens: usage.CacheReadTokens, CacheWriteTokens: usage.CacheWriteTokens}
	}
	return s
}

func untemplate(s string) string {
	return strings.ReplaceAll(s, "{{", `{{"{{"}}`)
}
