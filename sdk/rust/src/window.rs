//! The context window of a step, and the model calls a step hook makes
//! outside the conversation (../ABI.md, "The context window").

use crate::context::{Context, Step};
use crate::error::{Error, Result};
use crate::json::Value;
use crate::sys;
use crate::types::Message;

/// Window is what the model is sent at its next call.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Window {
    /// The model's context window, in tokens.
    pub size: i64,
    /// The model's max_output_tokens; 0 when the config does not say.
    pub reserved_output: i64,
    /// What the next call is sent, system prompt included.
    pub tokens: i64,
    /// That count at the turn's latest model call; 0 before the first.
    pub sent: i64,
    /// The messages, oldest first.
    pub messages: Vec<WindowMessage>,
}

/// WindowMessage is one message of the window.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WindowMessage {
    /// The message.
    pub message: Message,
    /// Its tokens.
    pub tokens: i64,
    /// The run of messages that stay or go together with it.
    pub unit: i64,
    /// It must stay.
    pub keep: bool,
    /// It summarises earlier messages.
    pub summary: bool,
}

/// CompletionRequest is a model call of a step hook.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompletionRequest {
    /// The system prompt.
    pub system: String,
    /// The messages; at least one.
    pub messages: Vec<Message>,
    /// 0 is the model's setting.
    pub max_output_tokens: i64,
    /// 0 is the host's default, 60 s.
    pub timeout_ms: i64,
}

/// Completion is the model's answer to a [`CompletionRequest`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Completion {
    /// The answer's text.
    pub text: String,
    /// Tokens read.
    pub input_tokens: i64,
    /// Tokens written.
    pub output_tokens: i64,
}

fn int(v: &Value, key: &str) -> i64 {
    v.get(key).and_then(Value::as_i64).unwrap_or(0)
}

fn answer(op: &str, r: std::result::Result<Vec<u8>, i32>) -> Result<Value> {
    let b = r.map_err(|n| Error::host(op, n))?;
    Ok(Value::parse(&String::from_utf8_lossy(&b))?)
}

fn ids_json(ids: &[String]) -> Value {
    Value::from(ids.to_vec())
}

impl Step {
    /// window reads the window the model is sent at its next call.
    pub fn window(&self) -> Result<Window> {
        let v = answer("window", sys::window(self.handle()))?;
        let messages = v
            .get("messages")
            .and_then(Value::as_array)
            .unwrap_or(&[])
            .iter()
            .map(|m| WindowMessage {
                message: m.get("message").map(Message::from_json).unwrap_or_default(),
                tokens: int(m, "tokens"),
                unit: int(m, "unit"),
                keep: m.get("keep").and_then(Value::as_bool).unwrap_or(false),
                summary: m.get("summary").and_then(Value::as_bool).unwrap_or(false),
            })
            .collect();
        Ok(Window { size: int(&v, "size"), reserved_output: int(&v, "reserved_output"), tokens: int(&v, "tokens"), sent: int(&v, "sent"), messages })
    }

    fn window_apply(&self, req: Value) -> Result<Value> {
        answer("window_apply", sys::window_apply(self.handle(), req.to_string().as_bytes()))
    }

    /// truncate leaves the messages out of what the model is sent (they stay
    /// in the conversation, marked) and publishes `context.truncated`.
    pub fn truncate(&self, ids: &[String], reason: &str) -> Result<()> {
        let mut req = Value::object().with("op", "truncate").with("ids", ids_json(ids));
        if !reason.is_empty() {
            req.set("reason", Value::from(reason));
        }
        self.window_apply(req).map(|_| ())
    }

    /// reduce truncates the oldest units until at most the share keep
    /// (0 < keep < 1) of the messages remain; it returns the counts before
    /// and after.
    pub fn reduce(&self, keep: f64, reason: &str) -> Result<(i64, i64)> {
        let mut req = Value::object().with("op", "reduce");
        req.set("keep", Value::Number(format!("{}", keep)));
        if !reason.is_empty() {
            req.set("reason", Value::from(reason));
        }
        let v = self.window_apply(req)?;
        Ok((int(&v, "before"), int(&v, "after")))
    }

    /// condense appends summary and shows it in place of the messages,
    /// which leave the window; it returns the summary's ID.
    pub fn condense(&self, ids: &[String], summary: &Message) -> Result<String> {
        let req = Value::object().with("op", "condense").with("ids", ids_json(ids)).with("summary", summary.to_json());
        Ok(self.window_apply(req)?.str_or_empty("id"))
    }

    /// complete calls the agent's model outside the conversation; its usage
    /// is charged to the turn. The manifest must declare `models`.
    pub fn complete(&self, r: &CompletionRequest) -> Result<Completion> {
        let mut req = Value::object();
        if !r.system.is_empty() {
            req.set("system", Value::from(r.system.as_str()));
        }
        req.set("messages", Value::Array(r.messages.iter().map(Message::to_json).collect()));
        if r.max_output_tokens != 0 {
            req.set("max_output_tokens", Value::from_i64(r.max_output_tokens));
        }
        if r.timeout_ms != 0 {
            req.set("timeout_ms", Value::from_i64(r.timeout_ms));
        }
        let v = answer("complete", sys::complete(self.handle(), req.to_string().as_bytes()))?;
        let usage = v.get("usage").cloned().unwrap_or(Value::Null);
        Ok(Completion { text: v.str_or_empty("text"), input_tokens: int(&usage, "input_tokens"), output_tokens: int(&usage, "output_tokens") })
    }
}
