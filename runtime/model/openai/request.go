package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/model"
)

// Building the request: a model.Request mapped to the SDK's parameters.

// emptySchema is the parameters of a tool without a schema.
var emptySchema = shared.FunctionParameters{"type": "object", "properties": json.RawMessage("{}")}

// params maps req to the SDK's request.
func (p *provider) params(req *model.Request) (oa.ChatCompletionNewParams, error) {
	var params oa.ChatCompletionNewParams
	params.Model = req.Model
	if params.Model == "" {
		params.Model = p.cfg.Model
	}
	if params.Model == "" {
		return params, invalid("no model: the request and the provider's config name none")
	}
	n := 0
	if req.Messages != nil {
		n = req.Messages.Len()
	}
	msgs := make([]oa.ChatCompletionMessageParamUnion, 0, n+1)
	if req.System != "" {
		msgs = append(msgs, oa.SystemMessage(req.System))
	}
	for i := range n {
		m := req.Messages.At(i)
		switch m.Role {
		case pipeline.RoleUser:
			msgs = append(msgs, oa.UserMessage(m.Content))
		case pipeline.RoleSystem:
			msgs = append(msgs, oa.SystemMessage(m.Content))
		case pipeline.RoleTool:
			msgs = append(msgs, oa.ToolMessage(m.Content, m.ToolCallID))
		case pipeline.RoleAssistant:
			a := &oa.ChatCompletionAssistantMessageParam{}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = param.NewOpt(m.Content)
			}
			if len(m.ToolCalls) > 0 {
				a.ToolCalls = make([]oa.ChatCompletionMessageToolCallUnionParam, len(m.ToolCalls))
				for j, c := range m.ToolCalls {
					args := string(c.Arguments)
					if args == "" {
						args = "{}"
					}
					a.ToolCalls[j].OfFunction = &oa.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: oa.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: args},
					}
				}
			}
			msgs = append(msgs, oa.ChatCompletionMessageParamUnion{OfAssistant: a})
		default:
			return params, invalid(fmt.Sprintf("message %d: unknown role %q", i, m.Role))
		}
	}
	params.Messages = msgs
	if len(req.Tools) > 0 {
		params.Tools = make([]oa.ChatCompletionToolUnionParam, len(req.Tools))
		for i, t := range req.Tools {
			schema, err := toolSchema(t.Parameters)
			if err != nil {
				return params, invalid(fmt.Sprintf("tool %q: %v", t.Name, err))
			}
			fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
			if t.Description != "" {
				fn.Description = param.NewOpt(t.Description)
			}
			params.Tools[i] = oa.ChatCompletionFunctionTool(fn)
		}
	}
	limit := req.MaxOutputTokens
	if limit <= 0 {
		limit = p.cfg.MaxOutputTokens
	}
	if limit > 0 {
		if p.completion {
			params.MaxCompletionTokens = param.NewOpt(int64(limit))
		} else {
			params.MaxTokens = param.NewOpt(int64(limit))
		}
	}
	params.StreamOptions.IncludeUsage = param.NewOpt(true)
	return params, nil
}

// toolSchema returns a tool's parameters as the SDK wants them (a map)
// without re-encoding what is below the top level: each value stays the
// schema's own bytes.
func toolSchema(raw json.RawMessage) (shared.FunctionParameters, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return emptySchema, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil || top == nil {
		return nil, errors.New("parameters schema is not a JSON object")
	}
	out := make(shared.FunctionParameters, len(top))
	for k, v := range top {
		out[k] = v
	}
	return out, nil
}
