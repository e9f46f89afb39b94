//! Pending items (ABI version 2, `../ABI.md` "Pending items"): a step or
//! toolCall hook pauses its turn for a human with an item of a kind the
//! extension registered ([`Api::pending`](crate::Api::pending)); the
//! kind's functions decide what the human's action means, what a timeout
//! means, and the result of a call an item paused.
//!
//! ```no_run
//! use ganglion::pending::{Action, Outcome, PendingItem, PendingKind};
//! use ganglion::{Api, Manifest, Result, ToolResult};
//!
//! ganglion::extension!(Manifest::new("gate", "1.0.0"), setup);
//!
//! fn setup(api: &Api) -> Result<()> {
//!     api.pending(PendingKind::new("ask", |_p, act: &Action| match act.value.as_str() {
//!         "yes" => Ok(Outcome::answered("yes", "A human approved the call.")),
//!         "no" => Ok(Outcome::rejected("no", "A human denied the call.")),
//!         v => Err(ganglion::Error::new(format!("answer yes or no, not {:?}", v))),
//!     })
//!     .resume(|r| {
//!         if r.item()?.answer == "yes" {
//!             r.run().map(|_| ())
//!         } else {
//!             r.set_result(&ToolResult { content: "denied".into(), is_error: true })
//!         }
//!     }));
//!     api.tool_call(|c| {
//!         if c.resuming()?.is_some() {
//!             return c.next();
//!         }
//!         c.pause(&PendingItem::new("ask", ganglion::Value::object().with("tool", c.name()?)))?;
//!         c.set_result(&ToolResult::text("waiting for a human"))
//!     });
//!     Ok(())
//! }
//! ```

use std::rc::Rc;

use crate::context::{Context, Step, ToolCall, RESULT, TOOL_ARGS};
use crate::error::{check, Error, Result};
use crate::json::Value;
use crate::sys;
use crate::types::{Message, ToolResult};

// The fields of a pending hook (../ABI.md, "Fields").
const PENDING_PHASE: i32 = 16;
const PENDING_ITEM: i32 = 17;
const ACTION: i32 = 18;
const RESUMING: i32 = 19;

pub(crate) type ResolveFn = Rc<dyn Fn(&PendingCall, &Action) -> Result<Outcome>>;
pub(crate) type ExpireFn = Rc<dyn Fn(&PendingCall) -> Result<Outcome>>;
pub(crate) type ResumeFn = Rc<dyn Fn(&Resume) -> Result<()>>;

const REPLY: i32 = 20;

/// Reply is the context of a reply hook ([`Api::reply`](crate::Api::reply)):
/// the step, and the model's reply as the runtime is about to store it.
pub struct Reply {
    step: Step,
}

impl crate::context::sealed::Sealed for Reply {}
impl Context for Reply {
    fn handle(&self) -> i32 {
        self.step.handle()
    }
}

impl Reply {
    pub(crate) fn new(ctx: i32) -> Reply {
        Reply { step: Step::new(ctx) }
    }

    /// message returns the model's reply.
    pub fn message(&self) -> Result<Message> {
        let b = sys::field(self.handle(), REPLY).map_err(|n| Error::host("field REPLY", n))?;
        Ok(Message::from_json(&Value::parse(&String::from_utf8_lossy(&b))?))
    }

    /// step returns the step the reply is of: its index, input and
    /// conversation (read only).
    pub fn step(&self) -> &Step {
        &self.step
    }

    /// pause opens a pending item stored in the same commit as the reply:
    /// the turn ends paused once the step is done. It returns the item's ID.
    pub fn pause(&self, it: &PendingItem) -> Result<String> {
        pause(self.handle(), it)
    }
}

/// PendingKind is a kind of pending item and what its resolutions mean.
/// The agent's config must grant its name under the extension's `pending:`.
#[derive(Clone)]
pub struct PendingKind {
    pub(crate) name: String,
    pub(crate) resolve: ResolveFn,
    pub(crate) expire: Option<ExpireFn>,
    pub(crate) resume: Option<ResumeFn>,
}

impl PendingKind {
    /// new returns the kind `name` (1 to 64 lower-case letters, digits, `_`
    /// or `-`) whose `resolve` decides what a human's action means. An error
    /// refuses the action: its text is what the human is told, and the item
    /// stays open.
    pub fn new(name: &str, resolve: impl Fn(&PendingCall, &Action) -> Result<Outcome> + 'static) -> PendingKind {
        PendingKind { name: name.to_string(), resolve: Rc::new(resolve), expire: None, resume: None }
    }

    /// expire decides an item nobody acted on in time; without it, or when
    /// it fails, the item's status is `timeout`.
    pub fn expire(mut self, f: impl Fn(&PendingCall) -> Result<Outcome> + 'static) -> PendingKind {
        self.expire = Some(Rc::new(f));
        self
    }

    /// resume decides the result of a call an item of this kind paused,
    /// when its turn resumes: run it ([`Resume::run`], [`Resume::run_with`])
    /// or give it a result ([`Resume::set_result`]). With it, a human may
    /// also edit the paused call's arguments (the action `edit`).
    pub fn resume(mut self, f: impl Fn(&Resume) -> Result<()> + 'static) -> PendingKind {
        self.resume = Some(Rc::new(f));
        self
    }

    /// spec is the kind's register spec.
    pub(crate) fn spec(&self) -> String {
        let mut v = Value::object().with("name", self.name.as_str());
        if self.resume.is_some() {
            v.set("resume", Value::Bool(true));
        }
        v.to_string()
    }
}

/// PendingItem is an item to open.
#[derive(Clone, Debug, PartialEq)]
pub struct PendingItem {
    /// A kind the extension registered.
    pub kind: String,
    /// What the human is asked: a JSON object.
    pub request: Value,
    /// The turn cannot go on without an answer.
    pub required: bool,
    /// A deadline, in milliseconds from now; 0 for none.
    pub timeout_ms: i64,
}

impl PendingItem {
    /// new returns a required item of kind with request and no deadline.
    pub fn new(kind: &str, request: Value) -> PendingItem {
        PendingItem { kind: kind.to_string(), request, required: true, timeout_ms: 0 }
    }

    fn to_json(&self) -> Value {
        Value::object()
            .with("kind", self.kind.as_str())
            .with("request", self.request.clone())
            .with("required", self.required)
            .with("timeout_ms", Value::from_i64(self.timeout_ms))
    }
}

/// pause opens it for the hook ctx and returns the item's ID.
fn pause(ctx: i32, it: &PendingItem) -> Result<String> {
    let b = sys::pause(ctx, it.to_json().to_string().as_bytes()).map_err(|n| Error::host("pause", n))?;
    let v = Value::parse(&String::from_utf8_lossy(&b))?;
    Ok(v.str_or_empty("id"))
}

impl Step {
    /// pause opens a pending item: the turn ends paused once the step is
    /// done, and resumes when every item it opened is resolved. It returns
    /// the item's ID.
    pub fn pause(&self, it: &PendingItem) -> Result<String> {
        pause(self.handle(), it)
    }
}

impl ToolCall {
    /// pause opens a pending item for the call, before next: the call does
    /// not run now. Unless the hook sets a result, the model reads `waiting
    /// for a human (pending item ID)` until the turn resumes; then the
    /// kind's resume decides the result. A call pauses once.
    pub fn pause(&self, it: &PendingItem) -> Result<String> {
        pause(self.handle(), it)
    }

    /// resuming returns the extension's own item whose resume runs this
    /// call ([`Resume::run`]), if any: a guard that paused the call lets it
    /// through then.
    pub fn resuming(&self) -> Result<Option<Item>> {
        match sys::field(self.handle(), RESUMING) {
            Ok(b) => Ok(Some(Item::from_json(&Value::parse(&String::from_utf8_lossy(&b))?))),
            Err(n) if n == -2 => Ok(None),
            Err(n) => Err(Error::host("field RESUMING", n)),
        }
    }
}

/// Item is a pending item as the runtime stores it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Item {
    /// Its ID, `p-...`.
    pub id: String,
    /// Its kind.
    pub kind: String,
    /// The instance it pauses.
    pub instance: String,
    /// The turn it paused.
    pub turn_id: String,
    /// The step that opened it.
    pub step: i64,
    /// The call it paused; empty for an item a step opened.
    pub call_id: String,
    /// What the human is asked.
    pub request: Value,
    /// Whether the turn cannot go on without an answer.
    pub required: bool,
    /// `pending` while open, then the outcome's.
    pub status: String,
    /// The outcome's answer, once resolved: resume reads it.
    pub answer: String,
    /// The outcome's reason.
    pub reason: String,
}

impl Item {
    fn from_json(v: &Value) -> Item {
        Item {
            id: v.str_or_empty("id"),
            kind: v.str_or_empty("kind"),
            instance: v.str_or_empty("instance"),
            turn_id: v.str_or_empty("turn_id"),
            step: v.get("step").and_then(Value::as_i64).unwrap_or(0),
            call_id: v.str_or_empty("call_id"),
            request: v.get("request").cloned().unwrap_or(Value::Null),
            required: v.get("required").and_then(Value::as_bool).unwrap_or(false),
            status: v.str_or_empty("status"),
            answer: v.str_or_empty("answer"),
            reason: v.str_or_empty("reason"),
        }
    }
}

/// Action is what a human did with an item.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Action {
    /// `answer`, `skip`, `provide`, `reject` or `edit`.
    pub kind: String,
    /// The answer, the provided value, or an edit's arguments (JSON). It
    /// may be a secret: never log or publish it.
    pub value: String,
    /// A rejection's reason.
    pub reason: String,
}

/// Outcome is what an action or a timeout makes of an item.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    /// `answered`, `provided`, `rejected`, `skipped`, `timeout` or `failed`.
    pub status: String,
    /// Kept with the item: resume reads it.
    pub answer: String,
    /// A rejection's reason.
    pub reason: String,
    /// What the model reads of the outcome when the turn resumes; never a
    /// secret.
    pub message: String,
    /// Leaves the item open to a later action.
    pub keep_open: bool,
    /// Fails the resumed turn.
    pub fails: bool,
    /// Keeps the action's value, encrypted, as the instance's secret of this
    /// name (the manifest's secrets must list it).
    pub secret: String,
}

impl Outcome {
    /// answered returns an `answered` outcome.
    pub fn answered(answer: &str, message: &str) -> Outcome {
        Outcome { status: "answered".into(), answer: answer.into(), message: message.into(), ..Outcome::default() }
    }

    /// rejected returns a `rejected` outcome.
    pub fn rejected(answer: &str, message: &str) -> Outcome {
        Outcome { status: "rejected".into(), answer: answer.into(), message: message.into(), ..Outcome::default() }
    }

    fn to_json(&self) -> Value {
        let mut v = Value::object().with("status", self.status.as_str());
        for (k, s) in [("answer", &self.answer), ("reason", &self.reason), ("message", &self.message), ("secret", &self.secret)] {
            if !s.is_empty() {
                v.set(k, Value::String(s.clone()));
            }
        }
        if self.keep_open {
            v.set("keep_open", Value::Bool(true));
        }
        if self.fails {
            v.set("fails", Value::Bool(true));
        }
        v
    }
}

/// PendingCall is the context of a kind's resolve and expire: the item, and
/// the extension's state and secrets for the item's instance.
pub struct PendingCall {
    ctx: i32,
}

impl crate::context::sealed::Sealed for PendingCall {}
impl Context for PendingCall {
    fn handle(&self) -> i32 {
        self.ctx
    }
}

impl PendingCall {
    /// item returns the item the call is about.
    pub fn item(&self) -> Result<Item> {
        let b = sys::field(self.ctx, PENDING_ITEM).map_err(|n| Error::host("field PENDING_ITEM", n))?;
        Ok(Item::from_json(&Value::parse(&String::from_utf8_lossy(&b))?))
    }
}

/// Resume is the context of a kind's resume: the call an item paused.
pub struct Resume {
    call: PendingCall,
}

impl crate::context::sealed::Sealed for Resume {}
impl Context for Resume {
    fn handle(&self) -> i32 {
        self.call.ctx
    }
}

impl Resume {
    /// item returns the item, with the outcome's answer.
    pub fn item(&self) -> Result<Item> {
        self.call.item()
    }

    /// run runs the paused call as the model made it, through the toolCall
    /// middleware (the extension's own hook sees
    /// [`ToolCall::resuming`]), and returns its result, which becomes the
    /// call's unless set_result follows.
    pub fn run(&self) -> Result<ToolResult> {
        let n = sys::next(self.call.ctx);
        if n < 0 {
            return Err(Error::next_failed(n));
        }
        let b = sys::field(self.call.ctx, RESULT).map_err(|n| Error::host("field RESULT", n))?;
        Ok(ToolResult::from_json(&Value::parse(&String::from_utf8_lossy(&b))?))
    }

    /// run_with runs the paused call with `args` (JSON text), a human's
    /// edit, in place of the model's arguments; the history keeps both.
    pub fn run_with(&self, args: &str) -> Result<ToolResult> {
        check("set_field TOOL_ARGS", sys::set_field(self.call.ctx, TOOL_ARGS, args.as_bytes()))?;
        self.run()
    }

    /// set_result gives the paused call its result without running it, or
    /// in place of what run returned.
    pub fn set_result(&self, r: &ToolResult) -> Result<()> {
        check("set_field RESULT", sys::set_field(self.call.ctx, RESULT, r.to_json().to_string().as_bytes())).map(|_| ())
    }
}

/// run is `ganglion_pending` for kind k and handle ctx.
pub(crate) fn run(k: &PendingKind, ctx: i32) -> Result<()> {
    let phase = sys::field(ctx, PENDING_PHASE).map_err(|n| Error::host("field PENDING_PHASE", n))?;
    let call = PendingCall { ctx };
    let outcome = match phase.as_slice() {
        b"resolve" => {
            let mut b = sys::field(ctx, ACTION).map_err(|n| Error::host("field ACTION", n))?;
            let v = Value::parse(&String::from_utf8_lossy(&b));
            // The action's value may be a secret: the raw bytes go.
            sys::wipe(&mut b);
            let v = v?;
            let act = Action { kind: v.str_or_empty("kind"), value: v.str_or_empty("value"), reason: v.str_or_empty("reason") };
            (k.resolve)(&call, &act)?
        }
        b"expire" => match &k.expire {
            Some(f) => f(&call)?,
            None => return Ok(()), // the host's default: status timeout
        },
        b"resume" => {
            let f = k.resume.as_ref().ok_or_else(|| Error::new(format!("pending kind {:?} has no resume", k.name)))?;
            return f(&Resume { call });
        }
        other => return Err(Error::new(format!("pending kind {:?}: unknown phase {:?}", k.name, String::from_utf8_lossy(other)))),
    };
    check("set_field RESULT", sys::set_field(ctx, RESULT, outcome.to_json().to_string().as_bytes())).map(|_| ())
}
