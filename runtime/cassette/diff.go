package cassette

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ganglion-dev/ganglion/runtime/model"
)

// Divergence is where a replay differs from its recording: a model call
// sent something else, or a tool call was made otherwise, or one that
// was not recorded was made.
type Divergence struct {
	// What names the call: `model call 3 (agent "a" instance "k" turn-2 step 1)`.
	What string
	// Diffs say what differs, one field each, the recorded value first:
	//
	//	messages[4].content: recorded "The file says 3", now "The file says 4"
	Diffs []string
}

// Error reads "replay diverged at WHAT:" and the diffs, one a line.
func (d *Divergence) Error() string {
	var b strings.Builder
	b.WriteString("replay diverged at ")
	b.WriteString(d.What)
	b.WriteString(":")
	for _, s := range d.Diffs {
		b.WriteString("\n  ")
		b.WriteString(s)
	}
	return b.String()
}

// maxDiffs bounds the fields one divergence lists.
const maxDiffs = 12

// requestDiffs compares the request sent now with the recorded call.
func requestDiffs(rec *call, req *model.Request) []string {
	var d []string
	add := func(field, was, now string) {
		if was != now {
			d = append(d, fieldDiff(field, was, now)...)
		}
	}
	add("model_name", rec.line.ModelName, req.Model)
	add("system", rec.line.System, req.System)
	add("max_output_tokens", strconv.Itoa(rec.line.MaxOutputTokens), strconv.Itoa(req.MaxOutputTokens))
	n := req.Messages.Len()
	for i := 0; i < max(n, len(rec.msgs)) && len(d) < maxDiffs; i++ {
		field := "messages[" + strconv.Itoa(i) + "]"
		switch {
		case i >= n:
			d = append(d, field+": recorded "+summary(rec.msgs[i])+", now no such message (the request has "+strconv.Itoa(n)+")")
		case i >= len(rec.msgs):
			d = append(d, field+": recorded no such message (the recording has "+strconv.Itoa(len(rec.msgs))+"), now "+summary(wireMessage(req.Messages.At(i))))
		default:
			d = append(d, messageDiffs(field, rec.msgs[i], wireMessage(req.Messages.At(i)))...)
		}
	}
	d = append(d, toolsDiffs(rec.tools, wireTools(req.Tools))...)
	if len(d) > maxDiffs {
		d = append(d[:maxDiffs], "... and "+strconv.Itoa(len(d)-maxDiffs)+" more")
	}
	return d
}

func messageDiffs(field string, was, now message) []string {
	var d []string
	add := func(name, a, b string) {
		if a != b {
			d = append(d, fieldDiff(field+"."+name, a, b)...)
		}
	}
	add("role", string(was.Role), string(now.Role))
	add("content", was.Content, now.Content)
	add("reasoning", was.Reasoning, now.Reasoning)
	add("tool_call_id", was.ToolCallID, now.ToolCallID)
	add("name", was.Name, now.Name)
	add("is_error", strconv.FormatBool(was.IsError), strconv.FormatBool(now.IsError))
	if len(was.ToolCalls) != len(now.ToolCalls) {
		d = append(d, fmt.Sprintf("%s.tool_calls: recorded %d, now %d", field, len(was.ToolCalls), len(now.ToolCalls)))
		return d
	}
	for i := range was.ToolCalls {
		f := field + ".tool_calls[" + strconv.Itoa(i) + "]"
		add(f[len(field)+1:]+".id", was.ToolCalls[i].ID, now.ToolCalls[i].ID)
		add(f[len(field)+1:]+".name", was.ToolCalls[i].Name, now.ToolCalls[i].Name)
		add(f[len(field)+1:]+".arguments", was.ToolCalls[i].Arguments, now.ToolCalls[i].Arguments)
	}
	return d
}

func toolsDiffs(was, now []toolSpec) []string {
	if sameTools(was, now) {
		return nil
	}
	names := func(ts []toolSpec) []string {
		out := make([]string, len(ts))
		for i, t := range ts {
			out[i] = t.Name
		}
		return out
	}
	a, b := names(was), names(now)
	if strings.Join(a, " ") != strings.Join(b, " ") {
		return []string{fmt.Sprintf("tools: recorded [%s], now [%s]", strings.Join(a, " "), strings.Join(b, " "))}
	}
	var d []string
	for i := range was {
		f := "tools[" + strconv.Itoa(i) + "] (" + was[i].Name + ")"
		if was[i].Description != now[i].Description {
			d = append(d, fieldDiff(f+".description", was[i].Description, now[i].Description)...)
		}
		if was[i].Category != now[i].Category {
			d = append(d, fieldDiff(f+".category", string(was[i].Category), string(now[i].Category))...)
		}
		if string(was[i].Parameters) != string(now[i].Parameters) {
			d = append(d, fieldDiff(f+".parameters", string(was[i].Parameters), string(now[i].Parameters))...)
		}
	}
	return d
}

func summary(m message) string {
	s := string(m.Role)
	if m.Content != "" {
		s += " " + clip(m.Content, 0, 60)
	}
	if len(m.ToolCalls) > 0 {
		s += fmt.Sprintf(" with %d tool calls", len(m.ToolCalls))
	}
	return s
}

// diffContext is how much of a long value a diff shows on each side of the
// first difference.
const diffContext = 40

// fieldDiff says how field differs: both values quoted, and for long
// values the stretch around their first difference, with its offset.
func fieldDiff(field, was, now string) []string {
	i := 0
	for i < len(was) && i < len(now) && was[i] == now[i] {
		i++
	}
	for i > 0 && i < len(was) && !utf8.RuneStart(was[i]) { // start at a character
		i--
	}
	at := ""
	if len(was) > 2*diffContext || len(now) > 2*diffContext {
		at = " (differs at byte " + strconv.Itoa(i) + ")"
	}
	return []string{field + at + ": recorded " + clip(was, i, diffContext) + ", now " + clip(now, i, diffContext)}
}

// clip quotes s, or for a long s the part of it around byte i, with
// ellipses where it is cut.
func clip(s string, i, n int) string {
	if len(s) <= 2*n {
		return strconv.Quote(s)
	}
	lo, hi := max(0, i-n), min(len(s), i+n)
	for lo > 0 && !utf8.RuneStart(s[lo]) {
		lo--
	}
	for hi < len(s) && !utf8.RuneStart(s[hi]) {
		hi++
	}
	q := strconv.Quote(s[lo:hi])
	if lo > 0 {
		q = "…" + q
	}
	if hi < len(s) {
		q += "…"
	}
	return q
}
