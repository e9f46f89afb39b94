package openai

import (
	"strconv"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// What the provider reads of the wire: chunk events, usage and error
// bodies, read with the scanner of scan.go.

// wireEvent is what the provider reads of one chunk event.
type wireEvent struct {
	content      string
	reasoning    string // reasoning_content
	reasoningAlt string // reasoning
	refusal      string
	finish       string
	calls        []callDelta
	hasUsage     bool
	usage        wireUsage
	err          wireError
}

func (ev *wireEvent) reset() {
	calls := ev.calls[:0]
	*ev = wireEvent{calls: calls}
}

// callDelta is one element of delta.tool_calls.
type callDelta struct {
	index    int64
	hasIndex bool
	id       string
	name     string
	args     string
}

type wireUsage struct {
	prompt, completion int64
	cached, cacheHit   int64
}

func (u wireUsage) usage() pipeline.Usage {
	cached := u.cached
	if cached == 0 {
		cached = u.cacheHit
	}
	prompt := max(u.prompt, 0)
	cached = min(max(cached, 0), prompt)
	return pipeline.Usage{InputTokens: prompt - cached, OutputTokens: max(u.completion, 0), CacheReadTokens: cached}
}

// event reads one chunk event.
func (p *parser) event(ev *wireEvent) {
	if p.peek() != '{' {
		p.fail("event is not a JSON object")
		return
	}
	p.i++
	for n := 0; p.more('}', &n); {
		switch string(p.key()) {
		case "choices":
			p.choices(ev)
		case "usage":
			p.usage(ev)
		case "error":
			p.errorValue(&ev.err)
		default:
			p.skip()
		}
	}
	p.end()
}

// choice is what the provider reads of one choice.
type choice struct {
	index                                     int64
	content, reasoning, reasoningAlt, refusal string
	finish                                    string
}

func (p *parser) choices(ev *wireEvent) {
	if !p.enter('[') {
		return
	}
	for n := 0; p.more(']', &n); {
		var c choice
		mark := len(ev.calls)
		if p.enter('{') {
			for m := 0; p.more('}', &m); {
				switch string(p.key()) {
				case "index":
					c.index = p.int()
				case "delta":
					p.delta(&c, ev)
				case "finish_reason":
					c.finish = p.str()
				default:
					p.skip()
				}
			}
		}
		if c.index != 0 {
			ev.calls = ev.calls[:mark]
			continue
		}
		ev.content, ev.reasoning, ev.reasoningAlt, ev.refusal = c.content, c.reasoning, c.reasoningAlt, c.refusal
		if c.finish != "" {
			ev.finish = c.finish
		}
	}
}

func (p *parser) delta(c *choice, ev *wireEvent) {
	if !p.enter('{') {
		return
	}
	for n := 0; p.more('}', &n); {
		switch string(p.key()) {
		case "content":
			c.content = p.str()
		case "reasoning_content":
			c.reasoning = p.str()
		case "reasoning":
			c.reasoningAlt = p.str()
		case "refusal":
			c.refusal = p.str()
		case "tool_calls":
			p.toolCalls(ev)
		default:
			p.skip()
		}
	}
}

func (p *parser) toolCalls(ev *wireEvent) {
	if !p.enter('[') {
		return
	}
	for n := 0; p.more(']', &n); {
		var d callDelta
		if p.enter('{') {
			for m := 0; p.more('}', &m); {
				switch string(p.key()) {
				case "index":
					if p.peek() != 'n' {
						d.index, d.hasIndex = p.int(), true
					} else {
						p.skip()
					}
				case "id":
					d.id = p.str()
				case "function":
					if p.enter('{') {
						for k := 0; p.more('}', &k); {
							switch string(p.key()) {
							case "name":
								d.name = p.str()
							case "arguments":
								d.args = p.text()
							default:
								p.skip()
							}
						}
					}
				default:
					p.skip()
				}
			}
		}
		ev.calls = append(ev.calls, d)
	}
}

func (p *parser) usage(ev *wireEvent) {
	if !p.enter('{') {
		return
	}
	ev.hasUsage = true
	u := &ev.usage
	for n := 0; p.more('}', &n); {
		switch string(p.key()) {
		case "prompt_tokens":
			u.prompt = p.int()
		case "completion_tokens":
			u.completion = p.int()
		case "prompt_cache_hit_tokens":
			u.cacheHit = p.int()
		case "prompt_tokens_details":
			if p.enter('{') {
				for m := 0; p.more('}', &m); {
					if string(p.key()) == "cached_tokens" {
						u.cached = p.int()
					} else {
						p.skip()
					}
				}
			}
		default:
			p.skip()
		}
	}
}

// errorValue reads the value of an "error" key: an object, a string, or
// null (no error).
func (p *parser) errorValue(w *wireError) {
	switch p.peek() {
	case 'n':
		if p.null() {
			return
		}
	case '"':
		w.present = true
		w.message = p.str()
		return
	case '{':
		w.present = true
		p.errorFields(w)
		return
	}
	w.present = true
	p.skip()
}

// errorFields reads the fields of an error object.
func (p *parser) errorFields(w *wireError) {
	if !p.enter('{') {
		return
	}
	for n := 0; p.more('}', &n); {
		switch string(p.key()) {
		case "message":
			w.message = p.text()
		case "code":
			w.code = p.text()
			if s, err := strconv.Atoi(w.code); err == nil && s >= 100 && s < 600 {
				w.status = int64(s)
			}
		case "type":
			w.typ = p.str()
		case "status":
			if p.peek() == '"' {
				s, _ := strconv.Atoi(p.str())
				w.status = int64(s)
			} else {
				w.status = p.int()
			}
		default:
			p.skip()
		}
	}
}

// errorBody reads an error response's body: OpenAI's {"error":{...}},
// {"error":"..."}, vLLM's top-level {"object":"error","message":...},
// FastAPI's {"detail":...}.
func (p *parser) errorBody(w *wireError) {
	if p.peek() != '{' {
		p.fail("not a JSON object")
		return
	}
	var top wireError
	p.i++
	for n := 0; p.more('}', &n); {
		switch string(p.key()) {
		case "error":
			p.errorValue(w)
		case "message", "detail":
			top.message = p.text()
		case "code":
			top.code = p.text()
			if s, err := strconv.Atoi(top.code); err == nil && s >= 100 && s < 600 {
				top.status = int64(s)
			}
		case "type":
			top.typ = p.str()
		default:
			p.skip()
		}
	}
	p.end()
	if !w.present && (top.message != "" || top.code != "" || top.typ != "") {
		top.present = true
		*w = top
	}
}
