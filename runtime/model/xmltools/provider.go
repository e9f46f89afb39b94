package xmltools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// Wrap returns p speaking the XML tool protocol, for models without native
// tool calling. For each request it
//
//   - passes no tools to p; instead it appends a description of the tools
//     and of the XML format of their calls to the system prompt;
//   - shows p the history as XML: tool calls as the XML the model writes,
//     tool results as user messages;
//   - parses the text p streams, turning the calls in it into tool-call
//     chunks; the other chunks pass through.
//
// A request that offers no tools keeps its system prompt, and its stream is
// not parsed; its history is still shown as XML. The calls of
// a response are numbered "xml_call_<turn>_<step>_<n>", unique within an
// instance's history.
func Wrap(p model.Provider) model.Provider { return &provider{inner: p} }

type provider struct{ inner model.Provider }

func (w *provider) Stream(ctx context.Context, req *model.Request) (model.Stream, error) {
	r := *req
	r.Tools = nil
	if req.Messages != nil {
		r.Messages = history{req.Messages}
	}
	var ps *parser
	if len(req.Tools) > 0 {
		r.System = joinPrompt(req.System, toolPrompt(req.Tools))
		ps = newParser(req.Tools, withIDPrefix(fmt.Sprintf("xml_call_%d_%d_", req.Turn, req.Step)))
	}
	s, err := w.inner.Stream(ctx, &r)
	if err != nil {
		return nil, err
	}
	if ps == nil {
		return s, nil
	}
	return &stream{inner: s, parser: ps}, nil
}

func joinPrompt(system, tools string) string {
	if system == "" {
		return tools
	}
	return strings.TrimRight(system, "\n") + "\n\n" + tools
}

// stream parses the text of the inner stream.
type stream struct {
	inner  model.Stream
	parser *parser
	queue  []model.Chunk
	done   bool  // the inner stream has ended
	err    error // how it ended, after the queue (io.EOF or a failure)
}

func (s *stream) Recv() (model.Chunk, error) {
	for len(s.queue) == 0 {
		if s.done {
			return model.Chunk{}, s.err
		}
		c, err := s.inner.Recv()
		switch {
		case err != nil:
			// The end, or a broken stream: what the parser holds comes
			// first, then the end.
			s.done, s.err = true, err
			if errors.Is(err, io.EOF) {
				s.err = io.EOF
			}
			s.queue = s.parser.close()
		case c.Kind == model.KindText:
			s.queue = s.parser.feed(c.Text)
		case c.Kind == model.KindError:
			s.queue = append(s.parser.close(), c)
			s.done, s.err = true, io.EOF
		default:
			return c, nil
		}
	}
	c := s.queue[0]
	s.queue = s.queue[1:]
	return c, nil
}

func (s *stream) Close() error { return s.inner.Close() }

// The prompt.

// toolPrompt describes tools and the XML format of their calls, for a
// system prompt: each tool's name, description and parameters (from its
// JSON schema), with an example call.
func toolPrompt(tools []pipeline.Tool) string {
	var b strings.Builder
	b.WriteString(`# Tools

You can use the tools listed below. To call a tool, write its name as an XML tag and each parameter as a tag inside it, each on its own line:

<tool_name>
<parameter_name>value</parameter_name>
<other_parameter>value</other_parameter>
</tool_name>

Rules:
- Write values as they are: no quotes, no escaping, no CDATA. A value of several lines goes between its tags on lines of its own.
- Integer, number and boolean values are plain text (42, 1.5, true); object and array values are JSON.
- Write nothing but parameter tags between a tool's tags, and close every tag.
- You may make several calls in one answer. Their results come back after your answer, one message each, starting with "[tool_name result]", or "[tool_name error]" if the call failed. Do not guess results: wait for them.
- To mention a tool in prose, write its name without angle brackets.
- Only these tools exist:
`)
	for _, t := range tools {
		writeTool(&b, t)
	}
	return strings.TrimRight(b.String(), "\n")
}

// propSchema is the part of a property's schema the prompt shows.
type propSchema struct {
	Type        json.RawMessage   `json:"type"`
	Description string            `json:"description"`
	Enum        []json.RawMessage `json:"enum"`
	Items       *struct {
		Type json.RawMessage `json:"type"`
	} `json:"items"`
}

func writeTool(b *strings.Builder, t pipeline.Tool) {
	fmt.Fprintf(b, "\n## %s\n", t.Name)
	if d := strings.TrimSpace(t.Description); d != "" {
		fmt.Fprintf(b, "%s\n", d)
	}
	names, props, required, ok := schemaProps(t.Parameters)
	switch {
	case !ok:
		b.WriteString("Parameters: any, each as <name>value</name>.\n")
	case len(names) == 0:
		b.WriteString("Parameters: none.\n")
	default:
		b.WriteString("Parameters:\n")
		for _, n := range names {
			pr := props[n]
			req := "optional"
			if slices.Contains(required, n) {
				req = "required"
			}
			fmt.Fprintf(b, "- %s (%s, %s)", n, describeType(pr), req)
			if d := strings.TrimSpace(pr.Description); d != "" {
				fmt.Fprintf(b, ": %s", strings.ReplaceAll(d, "\n", " "))
			}
			b.WriteByte('\n')
		}
	}
	fmt.Fprintf(b, "Usage:\n<%s>\n", t.Name)
	for _, n := range names {
		if ok && len(required) > 0 && !slices.Contains(required, n) {
			continue
		}
		fmt.Fprintf(b, "<%s>%s</%s>\n", n, placeholder(n, props[n]), n)
	}
	fmt.Fprintf(b, "</%s>\n", t.Name)
}

// schemaProps reads a parameters schema: its properties in the order the
// schema lists them, and the required ones. ok is false when the schema
// is empty or says nothing of properties.
func schemaProps(schema json.RawMessage) (names []string, props map[string]propSchema, required []string, ok bool) {
	if len(schema) == 0 {
		return nil, nil, nil, false
	}
	var s struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return nil, nil, nil, false
	}
	names, ok = objectKeys(s.Properties)
	if !ok || json.Unmarshal(s.Properties, &props) != nil {
		// A property that is not an object: show the names alone.
		props = nil
	}
	return names, props, s.Required, ok
}

// objectKeys returns the keys of a JSON object in their order.
func objectKeys(obj json.RawMessage) ([]string, bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		k, _ := t.(string)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return nil, false
		}
		keys = append(keys, k)
	}
	return keys, true
}

func describeType(pr propSchema) string {
	t := strings.Join(schemaTypes(pr.Type), " or ")
	if t == "" {
		t = "any"
	}
	if t == "array" && pr.Items != nil {
		if it := strings.Join(schemaTypes(pr.Items.Type), " or "); it != "" {
			t = "array of " + it + ", as JSON"
		}
	} else if t == "array" || t == "object" {
		t += ", as JSON"
	}
	if len(pr.Enum) > 0 {
		vals := make([]string, len(pr.Enum))
		for i, e := range pr.Enum {
			var s string
			if json.Unmarshal(e, &s) == nil {
				vals[i] = s
			} else {
				vals[i] = string(e)
			}
		}
		t += ", one of: " + strings.Join(vals, ", ")
	}
	return t
}

func placeholder(name string, pr propSchema) string {
	types := schemaTypes(pr.Type)
	if len(pr.Enum) > 0 {
		var s string
		if json.Unmarshal(pr.Enum[0], &s) == nil {
			return s
		}
		return string(pr.Enum[0])
	}
	if len(types) > 0 {
		switch types[0] {
		case "integer":
			return "1"
		case "number":
			return "1.5"
		case "boolean":
			return "true"
		case "array":
			return `["..."]`
		case "object":
			return `{"key": "value"}`
		}
	}
	return strings.ReplaceAll(name, "_", " ") + " here"
}

// The history.

// history shows msgs to a model that writes its tool calls as XML: an
// assistant message's tool calls are appended to its text as the XML the
// model writes ([renderCall]), and a tool message becomes a user message,
// "[read_file result]\n<the result>" ("[read_file error]\n..." when the
// call failed). A failed call that [diagnose] explains shows the
// diagnosis instead of the runtime's error, which speaks of JSON. Other
// messages are as they are.
//
// The view is lazy: message i is transformed when it is read, and the
// view holds nothing but msgs. It has one message for each of msgs.
type history struct{ msgs pipeline.MessageList }

func (h history) Len() int { return h.msgs.Len() }

func (h history) At(i int) pipeline.Message {
	m := h.msgs.At(i)
	switch m.Role {
	case pipeline.RoleAssistant:
		if len(m.ToolCalls) == 0 {
			return m
		}
		var b strings.Builder
		b.WriteString(m.Content)
		for _, c := range m.ToolCalls {
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
				b.WriteByte('\n')
			}
			b.WriteString(renderCall(c))
		}
		m.Content, m.ToolCalls = b.String(), nil
	case pipeline.RoleTool:
		name := m.Name
		if name == "" {
			name = "tool"
		}
		label, content := "result", m.Content
		if m.IsError {
			label = "error"
			if c, ok := h.call(i, m.ToolCallID); ok {
				if why, ok := diagnose(c); ok {
					content = fmt.Sprintf("Your <%s> call was not run: %s. Write the whole call again.", c.Name, why)
				}
			}
		}
		if content == "" {
			content = "(no output)"
		}
		m.Role, m.Content = pipeline.RoleUser, "["+name+" "+label+"]\n"+content
		m.ToolCallID, m.Name, m.IsError = "", "", false
	}
	return m
}

// call finds the call that the tool message i answers: in the assistant
// message before the run of tool messages i is in.
func (h history) call(i int, id string) (pipeline.ToolCall, bool) {
	for j := i - 1; j >= 0; j-- {
		m := h.msgs.At(j)
		if m.Role == pipeline.RoleTool {
			continue
		}
		if m.Role == pipeline.RoleAssistant {
			for _, c := range m.ToolCalls {
				if c.ID == id {
					return c, true
				}
			}
		}
		break
	}
	return pipeline.ToolCall{}, false
}

// renderCall writes c as the XML a model writes for it:
//
//	<read_file>
//	<path>notes.txt</path>
//	</read_file>
//
// String values are written as they are, other values as JSON; a value of
// several lines sits on lines of its own, which the parser trims off
// again, so that parsing the XML gives back the arguments. A malformed
// call's arguments (the raw text the model wrote, see [diagnose]) are
// written as they are; arguments that are not a JSON object go between the
// call's tags as they are.
func renderCall(c pipeline.ToolCall) string {
	raw := bytes.TrimSpace(c.Arguments)
	if bytes.HasPrefix(raw, []byte("<")) {
		return string(c.Arguments)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<%s>\n", c.Name)
	if !writeParams(&b, raw) && len(raw) > 0 {
		b.Write(raw)
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "</%s>", c.Name)
	return b.String()
}

// writeParams writes the members of a JSON object as parameter tags, and
// reports false, writing nothing, when args is not a JSON object.
func writeParams(b *strings.Builder, args []byte) bool {
	if !json.Valid(args) {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return false
	}
	var out strings.Builder
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return false
		}
		k, _ := t.(string)
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return false
		}
		val := string(v)
		var s string
		if len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &s) == nil {
			val = s
		} else {
			var c bytes.Buffer
			if json.Compact(&c, v) == nil {
				val = c.String()
			}
		}
		out.WriteString("<" + k + ">")
		if strings.Contains(val, "\n") {
			// On lines of its own; the parser drops one line break at
			// each end. A value ending in "\r" takes "\r\n", so that
			// the parser does not take its "\r" for part of the break.
			out.WriteByte('\n')
			out.WriteString(val)
			if strings.HasSuffix(val, "\r") {
				out.WriteByte('\r')
			}
			out.WriteByte('\n')
		} else {
			out.WriteString(val)
		}
		out.WriteString("</" + k + ">\n")
	}
	b.WriteString(out.String())
	return true
}
