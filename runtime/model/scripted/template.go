package scripted

import (
	"fmt"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/goccy/go-yaml/ast"

	"github.com/ganglion-dev/ganglion/runtime/model"
)

// Templates in a script's texts: compiled at load, rendered per request.

// templateData is what a step's template sees.
type templateData struct {
	Agent       string
	Instance    string
	Turn        int
	Step        int
	Kind        string
	Input       string
	LastMessage string
	ToolResult  string
}

// textPart is a step's text or reasoning: a plain string or a template.
type textPart struct {
	s    string
	tmpl *template.Template
	// flat holds the template's pieces when it is only text and plain field
	// references ("{{ .Input }}"); it is then rendered without text/template.
	flat []flatPiece
	pos  string // "file:line:col" of the template, for execution errors
}

// flatPiece is literal text (field 0) or a templateData field.
type flatPiece struct {
	text  string
	field templateField
}

// templateField names a field of templateData.
type templateField uint8

const (
	fieldNone templateField = iota
	fieldAgent
	fieldInstance
	fieldTurn
	fieldStep
	fieldInput
	fieldLastMessage
	fieldKind
	fieldToolResult
)

// templateFields maps field names to fields, for the flat fast path.
var templateFields = map[string]templateField{
	"Agent":       fieldAgent,
	"Instance":    fieldInstance,
	"Turn":        fieldTurn,
	"Step":        fieldStep,
	"Input":       fieldInput,
	"LastMessage": fieldLastMessage,
	"Kind":        fieldKind,
	"ToolResult":  fieldToolResult,
}

// renderFlat renders flat pieces as text/template would.
func renderFlat(pieces []flatPiece, d *templateData) string {
	var num [20]byte
	n := 0
	for _, p := range pieces {
		n += len(p.text) + len(d.string(p.field))
		if p.field == fieldTurn || p.field == fieldStep {
			n += len(num)
		}
	}
	var b strings.Builder
	b.Grow(n)
	for _, p := range pieces {
		switch p.field {
		case fieldNone:
			b.WriteString(p.text)
		case fieldTurn:
			b.Write(strconv.AppendInt(num[:0], int64(d.Turn), 10))
		case fieldStep:
			b.Write(strconv.AppendInt(num[:0], int64(d.Step), 10))
		default:
			b.WriteString(d.string(p.field))
		}
	}
	return b.String()
}

// string returns the value of a string field f, or "".
func (d *templateData) string(f templateField) string {
	switch f {
	case fieldAgent:
		return d.Agent
	case fieldInstance:
		return d.Instance
	case fieldInput:
		return d.Input
	case fieldLastMessage:
		return d.LastMessage
	case fieldKind:
		return d.Kind
	case fieldToolResult:
		return d.ToolResult
	}
	return ""
}

// appendChunks appends the part's chunks of kind to dst. It reports false
// when the template failed: dst then ends with the error chunk.
func (p *textPart) appendChunks(dst []model.Chunk, kind model.ChunkKind, size int, data *templateData) ([]model.Chunk, bool) {
	s := p.s
	switch {
	case p.flat != nil:
		s = renderFlat(p.flat, data)
	case p.tmpl != nil:
		var b strings.Builder
		if err := p.tmpl.Execute(&b, *data); err != nil {
			return append(dst, model.Chunk{Kind: model.KindError, Err: fmt.Errorf("scripted model: %s: %w", p.pos, err)}), false
		}
		s = b.String()
	}
	return appendSplit(dst, kind, s, size), true
}

// textPart compiles the text or reasoning s found at node n.
func (l *loader) textPart(n ast.Node, what, s string) (textPart, error) {
	if !strings.Contains(s, "{{") {
		return textPart{s: s}, nil
	}
	tk := nodeToken(n)
	pos := l.name
	if tk != nil && tk.Position != nil {
		pos = fmt.Sprintf("%s:%d:%d", l.name, tk.Position.Line, tk.Position.Column)
	}
	t, err := template.New(what).Parse(s)
	if err != nil {
		return textPart{}, l.errorf(n, "%s: invalid template: %s", what, strings.TrimPrefix(err.Error(), "template: "))
	}
	return textPart{tmpl: t, flat: flatten(t), pos: pos}, nil
}

// flatten returns the pieces of t if it is only text and references to
// fields of templateData, or nil.
func flatten(t *template.Template) []flatPiece {
	if t.Tree == nil || t.Tree.Root == nil {
		return nil
	}
	var pieces []flatPiece
	for _, n := range t.Tree.Root.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
			pieces = append(pieces, flatPiece{text: string(n.Text)})
		case *parse.ActionNode:
			p := n.Pipe
			if p == nil || len(p.Decl) != 0 || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
				return nil
			}
			f, ok := p.Cmds[0].Args[0].(*parse.FieldNode)
			if !ok || len(f.Ident) != 1 || templateFields[f.Ident[0]] == fieldNone {
				return nil
			}
			pieces = append(pieces, flatPiece{field: templateFields[f.Ident[0]]})
		default:
			return nil
		}
	}
	if pieces == nil {
		pieces = []flatPiece{}
	}
	return pieces
}
