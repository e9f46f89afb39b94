package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/ganglion-dev/ganglion/internal/yamlsrc"
	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// The documents of each level of a script. A nested structure is kept as an
// ast.Node and decoded on its own, so that every decode checks the keys of
// exactly one level and every error can point at its node.
type (
	scriptDoc struct {
		ChunkSize int      `yaml:"chunk_size"`
		Agents    ast.Node `yaml:"agents"`
	}
	agentDoc struct {
		Turns    ast.Node `yaml:"turns"`
		Fallback ast.Node `yaml:"fallback"`
	}
	entryDoc struct {
		Match *string  `yaml:"match"`
		Kind  *string  `yaml:"kind"`
		Steps ast.Node `yaml:"steps"`
	}
	stepDoc struct {
		Text      *string  `yaml:"text"`
		Reasoning *string  `yaml:"reasoning"`
		ToolCalls ast.Node `yaml:"tool_calls"`
		Usage     ast.Node `yaml:"usage"`
		Error     *string  `yaml:"error"`
	}
	toolCallDoc struct {
		Name      string   `yaml:"name"`
		ID        string   `yaml:"id"`
		Args      ast.Node `yaml:"args"`
		Arguments *string  `yaml:"arguments"`
	}
	usageDoc struct {
		InputTokens      int64 `yaml:"input_tokens"`
		OutputTokens     int64 `yaml:"output_tokens"`
		CacheReadTokens  int64 `yaml:"cache_read_tokens"`
		CacheWriteTokens int64 `yaml:"cache_write_tokens"`
	}
)

// The keys of each level, for unknown-key errors.
const (
	scriptKeys   = "chunk_size, agents"
	agentKeys    = "turns, fallback"
	entryKeys    = "match, kind, steps"
	stepKeys     = "text, reasoning, tool_calls, usage, error"
	toolCallKeys = "name, id, args, arguments"
	usageKeys    = "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens"
)

// scriptError is a load error at a position of a script.
type scriptError struct {
	file      string
	line, col int
	msg       string
	excerpt   string // source lines with a caret; may be empty
}

func (e *scriptError) Error() string {
	head := e.file + ":" + strconv.Itoa(e.line) + ":" + strconv.Itoa(e.col) + ": " + e.msg
	if e.excerpt == "" {
		return head
	}
	return head + "\n" + e.excerpt
}

// loader holds the state of one parse.
type loader struct {
	name      string
	src       []byte
	chunkSize int
	entryTok  map[ast.Node]*token.Token // the "-" of null sequence entries
	dec       *yaml.Decoder
	anchors   map[string][]*ast.AnchorNode // by name, in document order
}

func parseScript(name string, data []byte) (*Model, error) {
	// Cheap checks first: the parser's cost grows fast with size and depth.
	if err := yamlsrc.Check(data); err != nil {
		var le *yamlsrc.LimitError
		if errors.As(err, &le) && le.Line > 0 {
			return nil, &scriptError{file: name, line: le.Line, col: le.Column, msg: le.Msg,
				excerpt: yamlsrc.Snippet(yamlsrc.Lines(data), le.Line, le.Column)}
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	file, err := parseYAML(data)
	if err != nil {
		var ye yaml.Error
		if errors.As(err, &ye) && ye.GetToken() != nil {
			return nil, newScriptError(name, data, ye.GetToken(), ye.GetMessage())
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var docs []*ast.DocumentNode
	for _, d := range file.Docs {
		if d != nil && d.Body != nil {
			docs = append(docs, d)
		}
	}
	if len(docs) == 0 {
		return nil, &scriptError{file: name, line: 1, col: 1, msg: "script is empty (want a mapping with agents)"}
	}
	l := &loader{
		name:     name,
		src:      data,
		entryTok: map[ast.Node]*token.Token{},
		dec:      yaml.NewDecoder(strings.NewReader(""), yaml.DisallowUnknownField(), yaml.UseOrderedMap()),
		anchors:  map[string][]*ast.AnchorNode{},
	}
	if len(docs) > 1 {
		return nil, l.errorf(docs[1].Body, "script holds %d YAML documents (want one)", len(docs))
	}
	body := docs[0].Body
	for _, n := range ast.Filter(ast.AnchorType, body) {
		if a, ok := n.(*ast.AnchorNode); ok && a.Name != nil {
			name := a.Name.GetToken().Value
			l.anchors[name] = append(l.anchors[name], a)
		}
	}
	if err := l.checkAliases(body); err != nil {
		return nil, err
	}
	return l.script(body)
}

// maxExpandedNodes bounds the size of a script with its aliases expanded, so
// that a few nested aliases ("billion laughs") cannot exhaust memory.
const maxExpandedNodes = 1 << 18

// checkAliases rejects aliases that refer to their own anchor and scripts
// whose expansion exceeds maxExpandedNodes nodes.
func (l *loader) checkAliases(body ast.Node) error {
	sizes := map[*ast.AnchorNode]int{}
	const inProgress = -1
	var size func(n ast.Node) (int, error)
	size = func(n ast.Node) (int, error) {
		total := 1
		add := func(c ast.Node) error {
			if c == nil {
				return nil
			}
			k, err := size(c)
			total = min(total+k, maxExpandedNodes+1)
			return err
		}
		var err error
		switch n := n.(type) {
		case *ast.MappingNode:
			for _, v := range n.Values {
				if err = add(v); err != nil {
					break
				}
			}
		case *ast.MappingValueNode:
			if err = add(n.Key); err == nil {
				err = add(n.Value)
			}
		case *ast.SequenceNode:
			for _, v := range n.Values {
				if err = add(v); err != nil {
					break
				}
			}
		case *ast.TagNode:
			err = add(n.Value)
		case *ast.AnchorNode:
			switch k, seen := sizes[n]; {
			case seen && k == inProgress:
				return 0, l.errorf(n, "anchor &%s contains an alias to itself", n.Name.GetToken().Value)
			case seen:
				return k, nil
			}
			sizes[n] = inProgress
			err = add(n.Value)
			sizes[n] = total
		case *ast.AliasNode:
			if a := l.anchorOf(n); a != nil {
				if k, seen := sizes[a]; seen && k == inProgress {
					return 0, l.errorf(n, "alias *%s refers to its own anchor", a.Name.GetToken().Value)
				}
				err = add(a)
			}
		}
		if err == nil && total > maxExpandedNodes {
			err = l.errorf(n, "script is too large with its aliases expanded (over %d nodes)", maxExpandedNodes)
		}
		return total, err
	}
	_, err := size(body)
	return err
}

// parseYAML parses data. goccy/go-yaml has been known to panic on some
// malformed inputs; a panic on input is turned into an error here.
func parseYAML(data []byte) (f *ast.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("invalid YAML (parser failure: %v)", r)
		}
	}()
	return parser.ParseBytes(data, 0)
}

// decode decodes node n, a what with the given keys, into v.
func (l *loader) decode(n ast.Node, v any, what, keys string) error {
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("invalid YAML (decoder failure: %v)", r)
			}
		}()
		return l.dec.DecodeFromNode(n, v)
	}()
	if err == nil {
		return nil
	}
	var ye yaml.Error
	if !errors.As(err, &ye) || ye.GetToken() == nil {
		return l.errorf(n, "%s: %v", what, err)
	}
	tk := ye.GetToken()
	var msg string
	var (
		unknown    *yaml.UnknownFieldError
		typeErr    *yaml.TypeError
		nodeType   *yaml.UnexpectedNodeTypeError
		overflow   *yaml.OverflowError
		subject    = what
		keyOfValue = valueKey(tk)
	)
	if keyOfValue != "" {
		subject = keyOfValue
	}
	switch {
	case errors.As(err, &unknown):
		msg = fmt.Sprintf("unknown key %q in %s (known keys: %s)", tk.Value, what, keys)
	case errors.As(err, &typeErr):
		msg = fmt.Sprintf("%s: want %s, got %s", subject, typeName(typeErr.DstType), typeName(typeErr.SrcType))
	case errors.As(err, &nodeType):
		msg = fmt.Sprintf("%s: want %s, got %s", subject, nodeTypeName(nodeType.Expected), nodeTypeName(nodeType.Actual))
	case errors.As(err, &overflow):
		msg = fmt.Sprintf("%s: %s is out of range", subject, overflow.SrcNum)
	default:
		msg = ye.GetMessage()
	}
	return newScriptError(l.name, l.src, tk, msg)
}

// valueKey returns the key of the mapping value whose first token is tk, or
// "" when tk is not a mapping value.
func valueKey(tk *token.Token) string {
	p := tk.Prev
	if p == nil || p.Type != token.MappingValueType || p.Prev == nil {
		return ""
	}
	return p.Prev.Value
}

var mapSliceType = reflect.TypeFor[yaml.MapSlice]()

// typeName names a Go type as the YAML value it decodes from.
func typeName(t reflect.Type) string {
	if t == nil {
		return "null"
	}
	if t == mapSliceType {
		return "a mapping"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return typeName(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a sequence"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	}
	return t.String()
}

// nodeTypeName names a YAML node type.
func nodeTypeName(t ast.NodeType) string {
	switch t {
	case ast.MappingType, ast.MappingValueType:
		return "a mapping"
	case ast.SequenceType:
		return "a sequence"
	case ast.StringType, ast.LiteralType:
		return "a string"
	case ast.IntegerType:
		return "an integer"
	case ast.FloatType, ast.InfinityType, ast.NanType:
		return "a number"
	case ast.BoolType:
		return "a boolean"
	case ast.NullType:
		return "null"
	}
	return t.YAMLName()
}

// newScriptError returns a scriptError at tk in src.
func newScriptError(file string, src []byte, tk *token.Token, msg string) *scriptError {
	e := &scriptError{file: file, line: 1, col: 1, msg: msg}
	if tk == nil || tk.Position == nil || tk.Position.Line < 1 || tk.Position.Column < 1 {
		return e
	}
	e.line, e.col = tk.Position.Line, tk.Position.Column
	e.excerpt = yamlsrc.Snippet(yamlsrc.Lines(src), e.line, e.col)
	return e
}

func (l *loader) errorf(n ast.Node, format string, args ...any) error {
	tk := nodeToken(n)
	if et := l.entryTok[n]; et != nil {
		tk = et
	}
	return newScriptError(l.name, l.src, tk, fmt.Sprintf(format, args...))
}

// nodeToken returns the token where n starts in the source.
func nodeToken(n ast.Node) *token.Token {
	switch n := n.(type) {
	case nil:
		return nil
	case *ast.MappingNode:
		if !n.IsFlowStyle && len(n.Values) > 0 {
			return nodeToken(n.Values[0])
		}
	case *ast.MappingValueNode:
		if n.Key != nil {
			return n.Key.GetToken()
		}
	}
	return n.GetToken()
}

// resolve follows anchors and aliases to the node they stand for.
func (l *loader) resolve(n ast.Node) ast.Node {
	for range 64 { // bounds alias cycles
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.AliasNode:
			target := l.anchorOf(v)
			if target == nil {
				return n
			}
			n = target.Value
		default:
			return n
		}
	}
	return n
}

// anchorOf returns the anchor alias a refers to: the last one of its name
// before it in the source. It returns nil for an undefined alias.
func (l *loader) anchorOf(a *ast.AliasNode) *ast.AnchorNode {
	if a.Value == nil {
		return nil
	}
	var target *ast.AnchorNode
	off := a.GetToken().Position.Offset
	for _, an := range l.anchors[a.Value.GetToken().Value] {
		if an.GetToken().Position.Offset < off {
			target = an
		}
	}
	return target
}

// absent reports whether an optional node is missing or null.
func (l *loader) absent(n ast.Node) bool {
	n = l.resolve(n)
	return n == nil || n.Type() == ast.NullType
}

// field returns the value node of key in mapping n, or n itself when it
// cannot be found (for example, when the key comes from a merge key), so
// that an error can still point near it.
func (l *loader) field(n ast.Node, key string) ast.Node {
	if m, ok := l.resolve(n).(ast.MapNode); ok {
		it := m.MapRange()
		for it.Next() {
			if it.Key().GetToken().Value == key {
				return it.Value()
			}
		}
	}
	return n
}

// seq returns the elements of the sequence n, a what; nil when n is absent.
func (l *loader) seq(n ast.Node, what string) ([]ast.Node, error) {
	if l.absent(n) {
		return nil, nil
	}
	s, ok := l.resolve(n).(*ast.SequenceNode)
	if !ok {
		return nil, l.errorf(n, "%s: want a sequence, got %s", what, nodeTypeName(l.resolve(n).Type()))
	}
	for i, v := range s.Values {
		if v != nil && v.Type() == ast.NullType && i < len(s.Entries) && s.Entries[i] != nil && s.Entries[i].Start != nil {
			l.entryTok[v] = s.Entries[i].Start
		}
	}
	return s.Values, nil
}

func (l *loader) script(body ast.Node) (*Model, error) {
	var doc scriptDoc
	if err := l.decode(body, &doc, "script", scriptKeys); err != nil {
		return nil, err
	}
	if doc.ChunkSize < 0 {
		return nil, l.errorf(l.field(body, "chunk_size"), "chunk_size: %d is negative", doc.ChunkSize)
	}
	l.chunkSize = doc.ChunkSize
	if l.absent(doc.Agents) {
		return nil, l.errorf(body, "script has no agents")
	}
	agents, ok := l.resolve(doc.Agents).(ast.MapNode)
	if !ok {
		return nil, l.errorf(doc.Agents, "agents: want a mapping, got %s", nodeTypeName(l.resolve(doc.Agents).Type()))
	}
	s := &Model{name: l.name, agents: map[string]*scriptAgent{}}
	it := agents.MapRange()
	for it.Next() {
		key := it.Key()
		if key.IsMergeKey() {
			return nil, l.errorf(key, "agents: merge keys are not supported here")
		}
		name := key.GetToken().Value
		if name == "" {
			return nil, l.errorf(key, "agent name is empty")
		}
		if _, dup := s.agents[name]; dup {
			return nil, l.errorf(key, "duplicate agent %q", name)
		}
		a, err := l.agent(name, key, it.Value())
		if err != nil {
			return nil, err
		}
		s.agents[name] = a
		s.names = append(s.names, name)
	}
	if len(s.names) == 0 {
		return nil, l.errorf(doc.Agents, "script has no agents")
	}
	slices.Sort(s.names)
	return s, nil
}

func (l *loader) agent(name string, key, n ast.Node) (*scriptAgent, error) {
	if l.absent(n) {
		return nil, l.errorf(key, "agent %q has no turns and no fallback", name)
	}
	var doc agentDoc
	if err := l.decode(n, &doc, "agent", agentKeys); err != nil {
		return nil, err
	}
	a := &scriptAgent{name: name}
	turns, err := l.seq(doc.Turns, "turns")
	if err != nil {
		return nil, err
	}
	for _, tn := range turns {
		e, err := l.entry(tn, "turn", len(a.turns)+1)
		if err != nil {
			return nil, err
		}
		if e.conditional() {
			a.matches = append(a.matches, e)
		} else {
			a.turns = append(a.turns, e)
		}
	}
	if !l.absent(doc.Fallback) {
		if a.fallback, err = l.entry(doc.Fallback, "fallback", 0); err != nil {
			return nil, err
		}
		if a.fallback.re != nil {
			return nil, l.errorf(l.field(doc.Fallback, "match"), "fallback cannot have match")
		}
		if a.fallback.kind != "" {
			return nil, l.errorf(l.field(doc.Fallback, "kind"), "fallback cannot have kind (it answers the turns no entry does)")
		}
		a.fallback.label = " (fallback)"
	}
	if len(turns) == 0 && a.fallback == nil {
		return nil, l.errorf(key, "agent %q has no turns and no fallback", name)
	}
	return a, nil
}

// entry compiles a turn entry or the fallback; turn is the entry's turn
// number if it has no condition (0 for the fallback).
func (l *loader) entry(n ast.Node, what string, turn int) (*scriptEntry, error) {
	if l.absent(n) {
		return nil, l.errorf(n, "%s has no steps", what)
	}
	var doc entryDoc
	if err := l.decode(n, &doc, what, entryKeys); err != nil {
		return nil, err
	}
	e := &scriptEntry{}
	var conds []string
	if doc.Kind != nil {
		k := pipeline.InputKind(*doc.Kind)
		if !slices.Contains(inputKinds, k) {
			return nil, l.errorf(l.field(n, "kind"), "kind: %q is not a turn's kind (want %s)", *doc.Kind, kindList)
		}
		e.kind = k
		conds = append(conds, "kind "+*doc.Kind)
	}
	if doc.Match != nil {
		re, err := regexp.Compile(*doc.Match)
		if err != nil {
			return nil, l.errorf(l.field(n, "match"), "match: %v", err)
		}
		e.re = re
		conds = append(conds, fmt.Sprintf("match %q", *doc.Match))
	}
	if len(conds) > 0 {
		e.label = " (" + strings.Join(conds, ", ") + ")"
	}
	steps, err := l.seq(doc.Steps, "steps")
	if err != nil {
		return nil, err
	}
	if len(steps) == 0 {
		return nil, l.errorf(n, "%s has no steps", what)
	}
	if e.conditional() {
		turn = 0 // the turn number is known only per request
	}
	for i, sn := range steps {
		st, err := l.step(sn)
		if err != nil {
			return nil, err
		}
		if !st.template {
			st.chunks = st.appendChunks(nil, turn, i+1, nil)
			if turn == 0 {
				st.callN = defaultIDChunks(st.chunks)
			}
		}
		e.steps = append(e.steps, st)
	}
	return e, nil
}

// defaultIDChunks returns the scriptStep.callN of chunks built without
// default ids, or nil when no chunk lacks its id.
func defaultIDChunks(chunks []model.Chunk) []uint16 {
	var callN []uint16
	n := 0
	for i, c := range chunks {
		switch c.Kind {
		case model.KindToolCallStart, model.KindToolCallDelta, model.KindToolCallEnd:
			if c.Kind == model.KindToolCallStart {
				n++
			}
			if c.ToolCallID == "" {
				if callN == nil {
					callN = make([]uint16, len(chunks))
				}
				callN[i] = uint16(n)
			}
		}
	}
	return callN
}

func (l *loader) step(n ast.Node) (scriptStep, error) {
	if l.absent(n) {
		return scriptStep{}, l.errorf(n, "step has nothing in it (want one of %s)", stepKeys)
	}
	var doc stepDoc
	if err := l.decode(n, &doc, "step", stepKeys); err != nil {
		return scriptStep{}, err
	}
	st := scriptStep{chunkSize: l.chunkSize}
	calls, err := l.seq(doc.ToolCalls, "tool_calls")
	if err != nil {
		return st, err
	}
	if doc.Text == nil && doc.Reasoning == nil && len(calls) == 0 && l.absent(doc.Usage) && doc.Error == nil {
		return st, l.errorf(n, "step has nothing in it (want one of %s)", stepKeys)
	}
	if doc.Reasoning != nil {
		if st.reasoning, err = l.textPart(l.field(n, "reasoning"), "reasoning", *doc.Reasoning); err != nil {
			return st, err
		}
	}
	if doc.Text != nil {
		if st.text, err = l.textPart(l.field(n, "text"), "text", *doc.Text); err != nil {
			return st, err
		}
	}
	st.template = st.reasoning.tmpl != nil || st.text.tmpl != nil
	reads := func(p *string) bool { return p != nil && strings.Contains(*p, "ToolResult") }
	st.toolResult = st.template && (reads(doc.Reasoning) || reads(doc.Text))
	if len(calls) > math.MaxUint16 {
		return st, l.errorf(doc.ToolCalls, "step has %d tool calls (at most %d)", len(calls), math.MaxUint16)
	}
	ids := map[string]bool{}
	for _, cn := range calls {
		c, err := l.toolCall(cn)
		if err != nil {
			return st, err
		}
		if c.id != "" {
			if ids[c.id] {
				return st, l.errorf(l.field(cn, "id"), "duplicate tool call id %q in step", c.id)
			}
			ids[c.id] = true
		}
		st.calls = append(st.calls, c)
	}
	if !l.absent(doc.Usage) {
		var u usageDoc
		if err := l.decode(doc.Usage, &u, "usage", usageKeys); err != nil {
			return st, err
		}
		for _, f := range []struct {
			key string
			n   int64
		}{
			{"input_tokens", u.InputTokens},
			{"output_tokens", u.OutputTokens},
			{"cache_read_tokens", u.CacheReadTokens},
			{"cache_write_tokens", u.CacheWriteTokens},
		} {
			if f.n < 0 {
				return st, l.errorf(l.field(doc.Usage, f.key), "%s: %d is negative", f.key, f.n)
			}
		}
		st.usage = &pipeline.Usage{
			InputTokens:      u.InputTokens,
			OutputTokens:     u.OutputTokens,
			CacheReadTokens:  u.CacheReadTokens,
			CacheWriteTokens: u.CacheWriteTokens,
		}
	}
	if doc.Error != nil {
		if *doc.Error == "" {
			return st, l.errorf(l.field(n, "error"), "error: message is empty")
		}
		st.err = errors.New(*doc.Error)
	}
	return st, nil
}

func (l *loader) toolCall(n ast.Node) (scriptCall, error) {
	var doc toolCallDoc
	if err := l.decode(n, &doc, "tool call", toolCallKeys); err != nil {
		return scriptCall{}, err
	}
	if doc.Name == "" {
		return scriptCall{}, l.errorf(n, "tool call has no name")
	}
	c := scriptCall{id: doc.ID, name: doc.Name, args: "{}"}
	hasArgs := !l.absent(doc.Args)
	switch {
	case hasArgs && doc.Arguments != nil:
		return c, l.errorf(l.field(n, "arguments"), "tool call %q has both args and arguments (give one)", doc.Name)
	case doc.Arguments != nil:
		c.args = *doc.Arguments
	case hasArgs:
		args := l.resolve(doc.Args)
		if _, ok := args.(ast.MapNode); !ok {
			return c, l.errorf(doc.Args, "args: want a mapping, got %s", nodeTypeName(args.Type()))
		}
		var v any
		if err := l.decode(args, &v, "args", ""); err != nil {
			return c, err
		}
		b, err := appendJSON(nil, v)
		if err != nil {
			return c, l.errorf(doc.Args, "args: %v", err)
		}
		c.args = string(b)
	}
	return c, nil
}

// appendJSON appends v, a value decoded from YAML with ordered maps, to b as
// compact JSON; mappings keep their key order.
func appendJSON(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case yaml.MapSlice:
		b = append(b, '{')
		for i, item := range v {
			if i > 0 {
				b = append(b, ',')
			}
			key, ok := item.Key.(string)
			if !ok {
				key = fmt.Sprint(item.Key)
			}
			var err error
			if b, err = appendJSONScalar(b, key); err != nil {
				return nil, err
			}
			b = append(b, ':')
			if b, err = appendJSON(b, item.Value); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendJSON(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%v has no JSON encoding", v)
		}
	}
	return appendJSONScalar(b, v)
}

// appendJSONScalar appends v encoded by encoding/json, without HTML escaping.
func appendJSONScalar(b []byte, v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), nil
}
