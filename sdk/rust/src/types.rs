//! The ABI's structured values (../ABI.md): messages, message events, the
//! turn's input, the results of each hook kind, tool specs.
//!
//! Each type converts to and from its JSON [`Value`]. Writing leaves out
//! empty fields, which the host reads as their defaults; reading takes a
//! missing field as empty.

use crate::json::Value;

/// The roles of a message.
pub mod role {
    /// The user's message.
    pub const USER: &str = "user";
    /// The model's message.
    pub const ASSISTANT: &str = "assistant";
    /// A system message.
    pub const SYSTEM: &str = "system";
    /// A tool's result.
    pub const TOOL: &str = "tool";
}

/// The finish reasons of a turn, and a step's `stop`.
pub mod finish {
    /// The model answered with text.
    pub const TEXT: &str = "text_response";
    /// The turn reached its step limit, or a step middleware stopped it.
    pub const MAX_STEPS: &str = "max_steps";
    /// The turn waits for a human.
    pub const PAUSED: &str = "paused";
    /// The turn failed.
    pub const ERROR: &str = "error";
    /// The turn was aborted.
    pub const ABORTED: &str = "aborted";
}

/// The categories of a tool.
pub mod category {
    /// A tool that only reads.
    pub const READ: &str = "read";
    /// A tool that writes.
    pub const WRITE: &str = "write";
    /// A tool that runs commands.
    pub const EXECUTE: &str = "execute";
    /// A tool that drives a browser.
    pub const BROWSER: &str = "browser";
    /// A tool of an MCP server.
    pub const MCP: &str = "mcp";
    /// Any other tool.
    pub const OTHER: &str = "other";
}

fn put_str(v: &mut Value, key: &str, s: &str) {
    if !s.is_empty() {
        v.set(key, Value::from(s));
    }
}

/// Source says who wrote a message.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Source {
    /// `user`, `model`, `extension`, `agent`, `runtime`, ...
    pub kind: String,
    /// The extension's name, for source `extension`.
    pub extension: String,
    /// The agent's name, for source `agent`.
    pub agent: String,
}

impl Source {
    /// from_json reads a source.
    pub fn from_json(v: &Value) -> Source {
        Source { kind: v.str_or_empty("type"), extension: v.str_or_empty("extension"), agent: v.str_or_empty("agent") }
    }

    /// to_json writes the source.
    pub fn to_json(&self) -> Value {
        let mut v = Value::object().with("type", self.kind.as_str());
        put_str(&mut v, "extension", &self.extension);
        put_str(&mut v, "agent", &self.agent);
        v
    }
}

/// Call is one tool call an assistant message asks for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Call {
    /// The call's ID.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, JSON text as the model wrote them.
    pub arguments: String,
}

impl Call {
    /// from_json reads a call; its arguments may be a JSON string holding
    /// the JSON text (as the host writes them) or the JSON value itself.
    pub fn from_json(v: &Value) -> Call {
        let arguments = match v.get("arguments") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        Call { id: v.str_or_empty("id"), name: v.str_or_empty("name"), arguments }
    }

    /// to_json writes the call, its arguments as a JSON string, as the host does.
    pub fn to_json(&self) -> Value {
        Value::object().with("id", self.id.as_str()).with("name", self.name.as_str()).with("arguments", self.arguments.as_str())
    }
}

/// Message is one message of the conversation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Message {
    /// The message's ID, `msg-4`; empty for a message not stored yet.
    pub id: String,
    /// Its role: see [`role`]. Empty when written means the host's default.
    pub role: String,
    /// Its text.
    pub content: String,
    /// The model's reasoning, if it gave any.
    pub reasoning: String,
    /// The tool calls of an assistant message.
    pub tool_calls: Vec<Call>,
    /// The call a tool message answers.
    pub tool_call_id: String,
    /// The tool's name, on a tool message.
    pub name: String,
    /// Whether a tool message is an error result.
    pub is_error: bool,
    /// Who wrote it. An empty kind when written means the host's default.
    pub source: Source,
    /// Its metadata, an object, or null for none.
    pub metadata: Value,
    /// When it was stored (RFC 3339); empty for a message not stored yet.
    pub created_at: String,
}

impl Message {
    /// text returns a message with only a role and a text.
    pub fn text(role: &str, content: impl Into<String>) -> Message {
        Message { role: role.to_string(), content: content.into(), ..Message::default() }
    }

    /// from_json reads a message.
    pub fn from_json(v: &Value) -> Message {
        Message {
            id: v.str_or_empty("id"),
            role: v.str_or_empty("role"),
            content: v.str_or_empty("content"),
            reasoning: v.str_or_empty("reasoning"),
            tool_calls: v.get("tool_calls").and_then(Value::as_array).unwrap_or(&[]).iter().map(Call::from_json).collect(),
            tool_call_id: v.str_or_empty("tool_call_id"),
            name: v.str_or_empty("name"),
            is_error: v.get("is_error").and_then(Value::as_bool).unwrap_or(false),
            source: v.get("source").map(Source::from_json).unwrap_or_default(),
            metadata: v.get("metadata").cloned().unwrap_or(Value::Null),
            created_at: v.str_or_empty("created_at"),
        }
    }

    /// to_json writes the message, leaving out its empty fields.
    pub fn to_json(&self) -> Value {
        let mut v = Value::object();
        put_str(&mut v, "id", &self.id);
        put_str(&mut v, "role", &self.role);
        put_str(&mut v, "content", &self.content);
        put_str(&mut v, "reasoning", &self.reasoning);
        if !self.tool_calls.is_empty() {
            v.set("tool_calls", Value::Array(self.tool_calls.iter().map(Call::to_json).collect()));
        }
        put_str(&mut v, "tool_call_id", &self.tool_call_id);
        put_str(&mut v, "name", &self.name);
        if self.is_error {
            v.set("is_error", Value::Bool(true));
        }
        if !self.source.kind.is_empty() {
            v.set("source", self.source.to_json());
        }
        if !self.metadata.is_null() {
            v.set("metadata", self.metadata.clone());
        }
        put_str(&mut v, "created_at", &self.created_at);
        v
    }
}

/// MessageEvent appends, replaces or removes a message of the conversation
/// (`emit`).
#[derive(Clone, Debug, PartialEq)]
pub enum MessageEvent {
    /// Append the message.
    Append(Message),
    /// Replace the message whose ID is the first field with the second.
    Replace(String, Message),
    /// Remove the message with this ID.
    Remove(String),
}

impl MessageEvent {
    /// to_json writes the event.
    pub fn to_json(&self) -> Value {
        match self {
            MessageEvent::Append(m) => Value::object().with("type", "append").with("message", m.to_json()),
            MessageEvent::Replace(id, m) => {
                Value::object().with("type", "replace").with("target_id", id.as_str()).with("message", m.to_json())
            }
            MessageEvent::Remove(id) => Value::object().with("type", "remove").with("target_id", id.as_str()),
        }
    }
}

/// InputEvent is what a turn handles.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InputEvent {
    /// What started the turn: `user_message`, `agent_request`, ...
    pub kind: String,
    /// Its text.
    pub text: String,
    /// Its metadata, an object, or null for none.
    pub metadata: Value,
}

impl InputEvent {
    /// from_json reads an input event.
    pub fn from_json(v: &Value) -> InputEvent {
        InputEvent { kind: v.str_or_empty("kind"), text: v.str_or_empty("text"), metadata: v.get("metadata").cloned().unwrap_or(Value::Null) }
    }

    /// to_json writes the input event.
    pub fn to_json(&self) -> Value {
        let mut v = Value::object().with("kind", self.kind.as_str()).with("text", self.text.as_str());
        if !self.metadata.is_null() {
            v.set("metadata", self.metadata.clone());
        }
        v
    }
}

/// TurnResult is a turn's result: how it finished and the response.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TurnResult {
    /// See [`finish`].
    pub finish_reason: String,
    /// The response. Written without a role it is the assistant's; without
    /// a source, this extension's.
    pub response: Message,
}

impl TurnResult {
    /// text returns a result that answers with text.
    pub fn text(content: impl Into<String>) -> TurnResult {
        TurnResult { finish_reason: finish::TEXT.to_string(), response: Message { content: content.into(), ..Message::default() } }
    }

    /// from_json reads a turn result.
    pub fn from_json(v: &Value) -> TurnResult {
        TurnResult {
            finish_reason: v.str_or_empty("finish_reason"),
            response: v.get("response").map(Message::from_json).unwrap_or_default(),
        }
    }

    /// to_json writes the turn result.
    pub fn to_json(&self) -> Value {
        Value::object().with("finish_reason", self.finish_reason.as_str()).with("response", self.response.to_json())
    }
}

/// StepResult is what a step middleware may change of a step's result.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepResult {
    /// Non-empty ends the turn after this step with this finish reason.
    pub stop: String,
    /// Makes the turn go on after a text answer.
    pub continue_: bool,
}

impl StepResult {
    /// from_json reads a step result.
    pub fn from_json(v: &Value) -> StepResult {
        StepResult { stop: v.str_or_empty("stop"), continue_: v.get("continue").and_then(Value::as_bool).unwrap_or(false) }
    }

    /// to_json writes the step result.
    pub fn to_json(&self) -> Value {
        Value::object().with("stop", self.stop.as_str()).with("continue", self.continue_)
    }
}

/// ToolResult is a tool call's result.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolResult {
    /// What the model reads.
    pub content: String,
    /// Whether it is an error result.
    pub is_error: bool,
}

impl ToolResult {
    /// text returns a successful result.
    pub fn text(content: impl Into<String>) -> ToolResult {
        ToolResult { content: content.into(), is_error: false }
    }

    /// from_json reads a tool result.
    pub fn from_json(v: &Value) -> ToolResult {
        ToolResult { content: v.str_or_empty("content"), is_error: v.get("is_error").and_then(Value::as_bool).unwrap_or(false) }
    }

    /// to_json writes the tool result.
    pub fn to_json(&self) -> Value {
        Value::object().with("content", self.content.as_str()).with("is_error", self.is_error)
    }
}

/// ToolSpec describes a tool the extension offers the model.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolSpec {
    /// 1 to 64 letters, digits, `_` or `-`; the manifest must list it.
    pub name: String,
    /// What the model reads about it.
    pub description: String,
    /// Its arguments' JSON Schema, JSON text; empty for none. The host
    /// checks the model's arguments against it before the tool runs.
    pub parameters: String,
    /// See [`category`].
    pub category: String,
}

impl ToolSpec {
    /// to_json writes the spec; malformed parameters are an error.
    pub fn to_json(&self) -> crate::Result<Value> {
        let mut v = Value::object().with("name", self.name.as_str()).with("description", self.description.as_str());
        if !self.parameters.is_empty() {
            let p = Value::parse(&self.parameters)
                .map_err(|e| crate::Error::new(format!("tool {:?}: parameters: {}", self.name, e)))?;
            v.set("parameters", p);
        }
        put_str(&mut v, "category", &self.category);
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_round_trip() {
        let text = r#"{"id":"msg-4","role":"assistant","content":"hi","tool_calls":[{"id":"c1","name":"read_file","arguments":"{\"path\":\"a\"}"}],"source":{"type":"model"},"metadata":{"pinned":true},"created_at":"2026-11-22T07:00:00Z"}"#;
        let m = Message::from_json(&Value::parse(text).unwrap());
        assert_eq!(m.tool_calls[0].arguments, r#"{"path":"a"}"#);
        assert_eq!(m.to_json().to_string(), text);
    }

    #[test]
    fn call_arguments_as_a_value() {
        let c = Call::from_json(&Value::parse(r#"{"id":"c","name":"n","arguments":{"a":1}}"#).unwrap());
        assert_eq!(c.arguments, r#"{"a":1}"#);
    }
}
