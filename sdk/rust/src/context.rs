//! The contexts a hook receives: [`Turn`], [`Step`], [`ToolCall`] (also a
//! tool's) and [`Event`], and what all of them offer, [`Context`].
//!
//! A context names one hook call's handle. It is valid only while that call
//! runs (including the hooks nested in its `next`); the host refuses it
//! afterwards (`Code::Stale`), so do not keep one past its hook.

use std::cell::RefCell;

use crate::error::{check, Error, Result};
use crate::json::Value;
use crate::sys;
use crate::types::{InputEvent, Message, MessageEvent, StepResult, ToolResult, TurnResult};

// The fields of a hook's context (../ABI.md, "Fields").
pub(crate) const AGENT: i32 = 1;
pub(crate) const INSTANCE: i32 = 2;
pub(crate) const TURN_ID: i32 = 3;
pub(crate) const INPUT: i32 = 4;
pub(crate) const INPUT_TEXT: i32 = 5;
pub(crate) const STEP: i32 = 6;
pub(crate) const TOOL_NAME: i32 = 7;
pub(crate) const TOOL_ARGS: i32 = 8;
pub(crate) const CALL_ID: i32 = 9;
pub(crate) const TOOLS: i32 = 10;
pub(crate) const RESULT: i32 = 11;
pub(crate) const EVENT_TOPIC: i32 = 12;
pub(crate) const EVENT_DATA: i32 = 13;
pub(crate) const CONFIG: i32 = 14;
pub(crate) const IDEMPOTENCY_KEY: i32 = 15;

/// field_bytes reads field f of handle ctx.
pub(crate) fn field_bytes(ctx: i32, f: i32) -> Result<Vec<u8>> {
    sys::field(ctx, f).map_err(|n| Error::host(field_op(f), n))
}

fn field_op(f: i32) -> &'static str {
    match f {
        AGENT => "field AGENT",
        INSTANCE => "field INSTANCE",
        TURN_ID => "field TURN_ID",
        INPUT => "field INPUT",
        INPUT_TEXT => "field INPUT_TEXT",
        STEP => "field STEP",
        TOOL_NAME => "field TOOL_NAME",
        TOOL_ARGS => "field TOOL_ARGS",
        CALL_ID => "field CALL_ID",
        TOOLS => "field TOOLS",
        RESULT => "field RESULT",
        EVENT_TOPIC => "field EVENT_TOPIC",
        EVENT_DATA => "field EVENT_DATA",
        CONFIG => "field CONFIG",
        IDEMPOTENCY_KEY => "field IDEMPOTENCY_KEY",
        _ => "field",
    }
}

fn text(b: Vec<u8>) -> String {
    // The host writes UTF-8; anything else would be the host's bug.
    String::from_utf8(b).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

fn field_string(ctx: i32, f: i32) -> Result<String> {
    field_bytes(ctx, f).map(text)
}

fn field_json(ctx: i32, f: i32) -> Result<Value> {
    let b = field_bytes(ctx, f)?;
    Ok(Value::parse(&text(b))?)
}

fn set_field(ctx: i32, f: i32, v: &[u8]) -> Result<()> {
    let op = match f {
        INPUT => "set_field INPUT",
        TOOL_ARGS => "set_field TOOL_ARGS",
        TOOLS => "set_field TOOLS",
        RESULT => "set_field RESULT",
        _ => "set_field",
    };
    check(op, sys::set_field(ctx, f, v)).map(|_| ())
}

/// Cached is a field's text the guest read under an inbox generation.
struct Cached {
    gen: u64,
    text: String,
}

thread_local! {
    static INPUT_CACHE: RefCell<Cached> = const { RefCell::new(Cached { gen: 0, text: String::new() }) };
    static TOOL_CACHE: RefCell<Cached> = const { RefCell::new(Cached { gen: 0, text: String::new() }) };
}

/// cached_field reads field f (INPUT_TEXT in slot 1, TOOL_NAME in slot 2)
/// from the host only when the inbox does not say this hook has the text
/// read last: a read is a crossing into the host and a new string.
fn cached_field(ctx: i32, f: i32, slot: usize, cache: &'static std::thread::LocalKey<RefCell<Cached>>) -> Result<String> {
    let mine = sys::inbox_slot(0) == ctx as u32 as u64;
    let gen = sys::inbox_slot(slot);
    if mine && gen != 0 {
        let hit = cache.with(|c| {
            let c = c.borrow();
            if c.gen == gen {
                Some(c.text.clone())
            } else {
                None
            }
        });
        if let Some(t) = hit {
            return Ok(t);
        }
    }
    let t = field_string(ctx, f)?;
    if mine && gen != 0 {
        cache.with(|c| *c.borrow_mut() = Cached { gen, text: t.clone() });
    }
    Ok(t)
}

pub(crate) mod sealed {
    pub trait Sealed {}
}

/// Context is what every hook's context offers: [`Turn`], [`Step`],
/// [`ToolCall`] and [`Event`]. Only this crate implements it.
pub trait Context: sealed::Sealed {
    /// handle returns the handle the host passed the hook.
    fn handle(&self) -> i32;

    /// agent returns the agent's name.
    fn agent(&self) -> Result<String> {
        field_string(self.handle(), AGENT)
    }

    /// instance returns the key of the instance the hook runs for.
    fn instance(&self) -> Result<String> {
        field_string(self.handle(), INSTANCE)
    }

    /// state returns the extension's JSON state for the instance, or None
    /// when it has none. The manifest must declare `state`.
    fn state(&self) -> Result<Option<Value>> {
        match sys::state_get(self.handle()) {
            Ok(b) if b.is_empty() => Ok(None),
            Ok(b) => Ok(Some(Value::parse(&text(b))?)),
            Err(-2) => Ok(None),
            Err(n) => Err(Error::host("state_get", n)),
        }
    }

    /// set_state stores v (at most 1 MiB of JSON) as the extension's state
    /// for the instance, persisted with it.
    fn set_state(&self, v: &Value) -> Result<()> {
        check("state_set", sys::state_set(self.handle(), v.to_string().as_bytes())).map(|_| ())
    }

    /// clear_state deletes the extension's state for the instance.
    fn clear_state(&self) -> Result<()> {
        check("state_set", sys::state_set(self.handle(), &[])).map(|_| ())
    }

    /// secret returns the value of the secret `name` provided to the
    /// instance (an API key a human gave a paused turn); `Code::NotFound`
    /// when none was. The manifest must list the name and the config grant
    /// it. Do not log, publish or store it.
    fn secret(&self, name: &str) -> Result<String> {
        let mut b = sys::secret(self.handle(), name.as_bytes()).map_err(|n| Error::host("secret", n))?;
        let s = String::from_utf8_lossy(&b).into_owned();
        sys::wipe(&mut b);
        Ok(s)
    }

    /// publish publishes an event with data (JSON; `Value::Null` publishes
    /// none) on the runtime's bus, for the instance. A pattern of the
    /// manifest's `publish` must match the topic.
    fn publish(&self, topic: &str, data: &Value) -> Result<()> {
        let d = if data.is_null() { String::new() } else { data.to_string() };
        check("publish", sys::publish(self.handle(), topic.as_bytes(), d.as_bytes())).map(|_| ())
    }
}

macro_rules! context {
    ($t:ident) => {
        impl sealed::Sealed for $t {}
        impl Context for $t {
            fn handle(&self) -> i32 {
                self.ctx
            }
        }
    };
}

/// Agents calls other agents from a turn or step hook (the native
/// `ctx.agents`). The manifest must list each agent and the config grant it.
pub struct Agents {
    ctx: i32,
}

/// AgentOptions tune an agent call.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AgentOptions {
    /// The callee's instance; empty is the callee's instance for this caller.
    pub instance: String,
    /// How long to wait, in milliseconds; 0 is the host's default (15 s).
    pub timeout_ms: u64,
    /// Added to the call's input metadata; an object, or null for none.
    pub metadata: Value,
}

/// AgentReply is the answer of [`Agents::request`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AgentReply {
    /// The callee's answer.
    pub text: String,
    /// How the callee's turn finished.
    pub finish_reason: String,
}

impl Agents {
    fn request_json(agent: &str, text: &str, o: &AgentOptions) -> String {
        let mut v = Value::object().with("agent", agent).with("text", text);
        if !o.instance.is_empty() {
            v.set("instance", Value::from(o.instance.as_str()));
        }
        if o.timeout_ms > 0 {
            v.set("timeout_ms", Value::Number(o.timeout_ms.to_string()));
        }
        if !o.metadata.is_null() {
            v.set("metadata", o.metadata.clone());
        }
        v.to_string()
    }

    /// request asks agent and waits for its answer.
    pub fn request(&self, agent: &str, text: &str, o: &AgentOptions) -> Result<AgentReply> {
        let req = Agents::request_json(agent, text, o);
        let b = sys::agents_request(self.ctx, req.as_bytes()).map_err(|n| Error::host("agents_request", n))?;
        let v = Value::parse(&String::from_utf8_lossy(&b))?;
        Ok(AgentReply { text: v.str_or_empty("text"), finish_reason: v.str_or_empty("finish_reason") })
    }

    /// send sends text to agent without waiting for an answer.
    pub fn send(&self, agent: &str, text: &str, o: &AgentOptions) -> Result<()> {
        let req = Agents::request_json(agent, text, o);
        check("agents_send", sys::agents_send(self.ctx, req.as_bytes())).map(|_| ())
    }
}

fn messages_len(ctx: i32) -> Result<i32> {
    check("messages_len", sys::messages_len(ctx))
}

fn message(ctx: i32, index: i32) -> Result<Message> {
    let b = sys::message(ctx, index).map_err(|n| Error::host("message", n))?;
    Ok(Message::from_json(&Value::parse(&text(b))?))
}

fn emit(ctx: i32, ev: &MessageEvent) -> Result<()> {
    check("emit", sys::emit(ctx, ev.to_json().to_string().as_bytes())).map(|_| ())
}

/// next runs the rest of the chain: inlined into the hook, so that a next
/// that succeeds costs the host call and a comparison.
#[inline(always)]
fn next(ctx: i32) -> Result<()> {
    match sys::next(ctx) {
        n if n < 0 => Err(next_failed(n)),
        _ => Ok(()),
    }
}

#[cold]
#[inline(never)]
fn next_failed(n: i32) -> Error {
    Error::next_failed(n)
}

/// Turn is the context of a turn middleware.
pub struct Turn {
    ctx: i32,
}
context!(Turn);

impl Turn {
    pub(crate) fn new(ctx: i32) -> Turn {
        Turn { ctx }
    }

    /// turn_id returns the turn's ID, `turn-7`.
    pub fn turn_id(&self) -> Result<String> {
        field_string(self.ctx, TURN_ID)
    }

    /// input_text returns the text of the turn's input. It asks the host
    /// only when the text is not the one this instance read last.
    pub fn input_text(&self) -> Result<String> {
        cached_field(self.ctx, INPUT_TEXT, 1, &INPUT_CACHE)
    }

    /// input returns the turn's input.
    pub fn input(&self) -> Result<InputEvent> {
        field_json(self.ctx, INPUT).map(|v| InputEvent::from_json(&v))
    }

    /// set_input changes the input before next; the model and the history
    /// see the new one.
    pub fn set_input(&self, ev: &InputEvent) -> Result<()> {
        set_field(self.ctx, INPUT, ev.to_json().to_string().as_bytes())
    }

    /// messages_len returns the conversation's length. Before next it holds
    /// the earlier turns only: the input joins it in the innermost handler.
    pub fn messages_len(&self) -> Result<i32> {
        messages_len(self.ctx)
    }

    /// message returns message index; a negative index counts from the end.
    pub fn message(&self, index: i32) -> Result<Message> {
        message(self.ctx, index)
    }

    /// emit appends, replaces or removes a message of the conversation.
    pub fn emit(&self, ev: &MessageEvent) -> Result<()> {
        emit(self.ctx, ev)
    }

    /// next runs the rest of the turn: the inner layers, then the model.
    /// Call it at most once; its result is then [`Turn::result`]. When the
    /// rest fails, the error is that failure ([`Error::is_next_failure`]):
    /// return it to pass it on unchanged, or set a result of your own.
    #[inline]
    pub fn next(&self) -> Result<()> {
        next(self.ctx)
    }

    /// result returns the turn's result: the one next returned, or the one
    /// set since.
    pub fn result(&self) -> Result<TurnResult> {
        field_json(self.ctx, RESULT).map(|v| TurnResult::from_json(&v))
    }

    /// set_result sets the turn's result: without next it answers the turn;
    /// after next it replaces the model's answer.
    pub fn set_result(&self, r: &TurnResult) -> Result<()> {
        set_field(self.ctx, RESULT, r.to_json().to_string().as_bytes())
    }

    /// agents calls other agents.
    pub fn agents(&self) -> Agents {
        Agents { ctx: self.ctx }
    }
}

/// Step is the context of a step middleware.
pub struct Step {
    ctx: i32,
}
context!(Step);

impl Step {
    pub(crate) fn new(ctx: i32) -> Step {
        Step { ctx }
    }

    /// turn_id returns the turn's ID.
    pub fn turn_id(&self) -> Result<String> {
        field_string(self.ctx, TURN_ID)
    }

    /// input_text returns the text of the turn's input (see [`Turn::input_text`]).
    pub fn input_text(&self) -> Result<String> {
        cached_field(self.ctx, INPUT_TEXT, 1, &INPUT_CACHE)
    }

    /// input returns the turn's input.
    pub fn input(&self) -> Result<InputEvent> {
        field_json(self.ctx, INPUT).map(|v| InputEvent::from_json(&v))
    }

    /// index returns the step's number in its turn, from 1.
    pub fn index(&self) -> Result<i64> {
        let s = field_string(self.ctx, STEP)?;
        s.parse::<i64>().map_err(|_| Error::new(format!("field STEP: not a number: {:?}", s)))
    }

    /// tools returns the names of the tools the model is offered.
    pub fn tools(&self) -> Result<Vec<String>> {
        let v = field_json(self.ctx, TOOLS)?;
        Ok(v.as_array().unwrap_or(&[]).iter().filter_map(|t| t.as_str().map(String::from)).collect())
    }

    /// set_tools keeps only the named tools in what the model is offered.
    pub fn set_tools(&self, names: &[String]) -> Result<()> {
        set_field(self.ctx, TOOLS, Value::from(names.to_vec()).to_string().as_bytes())
    }

    /// messages_len returns the conversation's length: before next,
    /// everything the model is about to see.
    pub fn messages_len(&self) -> Result<i32> {
        messages_len(self.ctx)
    }

    /// message returns message index; a negative index counts from the end.
    pub fn message(&self, index: i32) -> Result<Message> {
        message(self.ctx, index)
    }

    /// emit appends, replaces or removes a message before the model sees it.
    pub fn emit(&self, ev: &MessageEvent) -> Result<()> {
        emit(self.ctx, ev)
    }

    /// next runs the rest of the step: the inner layers, the model and the
    /// tool calls. Call it at most once.
    #[inline]
    pub fn next(&self) -> Result<()> {
        next(self.ctx)
    }

    /// result returns the step's result, after next.
    pub fn result(&self) -> Result<StepResult> {
        field_json(self.ctx, RESULT).map(|v| StepResult::from_json(&v))
    }

    /// set_result changes the step's result, after next.
    pub fn set_result(&self, r: &StepResult) -> Result<()> {
        set_field(self.ctx, RESULT, r.to_json().to_string().as_bytes())
    }

    /// agents calls other agents.
    pub fn agents(&self) -> Agents {
        Agents { ctx: self.ctx }
    }
}

/// ToolCall is the context of a toolCall middleware, and of a tool the
/// extension registered.
pub struct ToolCall {
    ctx: i32,
}
context!(ToolCall);

impl ToolCall {
    pub(crate) fn new(ctx: i32) -> ToolCall {
        ToolCall { ctx }
    }

    /// turn_id returns the turn's ID.
    pub fn turn_id(&self) -> Result<String> {
        field_string(self.ctx, TURN_ID)
    }

    /// step returns the number of the step that made the call.
    pub fn step(&self) -> Result<i64> {
        let s = field_string(self.ctx, STEP)?;
        s.parse::<i64>().map_err(|_| Error::new(format!("field STEP: not a number: {:?}", s)))
    }

    /// name returns the called tool's name. It asks the host only when the
    /// name is not the one this instance read last.
    pub fn name(&self) -> Result<String> {
        cached_field(self.ctx, TOOL_NAME, 2, &TOOL_CACHE)
    }

    /// args returns the call's arguments, JSON text as the model wrote them
    /// (possibly malformed).
    pub fn args(&self) -> Result<String> {
        field_string(self.ctx, TOOL_ARGS)
    }

    /// args_json returns the call's arguments parsed.
    pub fn args_json(&self) -> Result<Value> {
        field_json(self.ctx, TOOL_ARGS)
    }

    /// set_args replaces the arguments before next (toolCall middleware).
    pub fn set_args(&self, json: &str) -> Result<()> {
        set_field(self.ctx, TOOL_ARGS, json.as_bytes())
    }

    /// call_id returns the call's ID.
    pub fn call_id(&self) -> Result<String> {
        field_string(self.ctx, CALL_ID)
    }

    /// idempotency_key returns the call's stable key, `gk-` and 32 hex
    /// digits: the same for every run of this call, different for any
    /// other. A tool whose effect must not happen twice records it.
    pub fn idempotency_key(&self) -> Result<String> {
        field_string(self.ctx, IDEMPOTENCY_KEY)
    }

    /// next runs the rest of the call: the inner layers, then the tool.
    /// Call it at most once (toolCall middleware).
    #[inline]
    pub fn next(&self) -> Result<()> {
        next(self.ctx)
    }

    /// result returns the call's result, after next.
    pub fn result(&self) -> Result<ToolResult> {
        field_json(self.ctx, RESULT).map(|v| ToolResult::from_json(&v))
    }

    /// set_result sets the call's result: after next it replaces the
    /// tool's; without next it answers the call.
    pub fn set_result(&self, r: &ToolResult) -> Result<()> {
        set_field(self.ctx, RESULT, r.to_json().to_string().as_bytes())
    }
}

/// Event is the context of an event delivered to a subscription.
pub struct Event {
    ctx: i32,
}
context!(Event);

impl Event {
    pub(crate) fn new(ctx: i32) -> Event {
        Event { ctx }
    }

    /// topic returns the event's topic.
    pub fn topic(&self) -> Result<String> {
        field_string(self.ctx, EVENT_TOPIC)
    }

    /// data returns the event's data.
    pub fn data(&self) -> Result<Value> {
        field_json(self.ctx, EVENT_DATA)
    }
}
