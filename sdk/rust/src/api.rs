//! Declaring the extension: its manifest, its config, and what it registers
//! ([`Api`]); and running what it registered when the host calls a hook.

use std::cell::RefCell;

use crate::context::{field_bytes, Event, Step, ToolCall, Turn, CONFIG};
use crate::error::{Error, Result};
use crate::json::Value;
use crate::pending::PendingKind;
use crate::sys;
use crate::types::{ToolResult, ToolSpec};

/// Kind is a kind of `register` (../ABI.md, "register").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Turn = 1,
    Step = 2,
    ToolCall = 3,
    Tool = 4,
    Event = 5,
    Pending = 6,
    Reply = 7,
}

/// Manifest declares what the extension may do. The hooks and tools it
/// registers, and the patterns it subscribes to, are added to it by
/// [`init`]; the rest the host checks against the agent's config.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Manifest {
    /// For people: `ganglion ext inspect` prints it.
    pub name: String,
    /// For people, as the name.
    pub version: String,
    /// Topic patterns the extension may publish on (`twin.*`).
    pub publish: Vec<String>,
    /// Agents it may call; the config must grant each.
    pub agents: Vec<String>,
    /// Secrets it may read; the config must grant each.
    pub secrets: Vec<String>,
    /// Whether it keeps state per instance.
    pub state: bool,
    /// Whether its step hooks call the agent's model.
    pub models: bool,
    /// Paths of the agent's workspace it reads and writes; the config must
    /// grant each ([`crate::files`]).
    pub files: crate::files::Files,
    /// Origins (`scheme://host[:port]`) it calls with
    /// [`Http`](crate::http::Http); the config must grant each. ABI version 2.
    pub http: Vec<String>,
}

impl Manifest {
    /// new returns a manifest that declares a name and a version only.
    pub fn new(name: &str, version: &str) -> Manifest {
        Manifest { name: name.to_string(), version: version.to_string(), ..Manifest::default() }
    }

    fn to_json(&self, hooks: Vec<String>, tools: Vec<String>, subscribe: Vec<String>) -> Value {
        let topics = Value::object().with("publish", self.publish.clone()).with("subscribe", subscribe);
        let mut v = Value::object()
            .with("name", self.name.as_str())
            .with("version", self.version.as_str())
            .with("abi", crate::ABI_VERSION)
            .with("hooks", hooks)
            .with("tools", tools)
            .with("topics", topics)
            .with("agents", self.agents.clone())
            .with("secrets", self.secrets.clone());
        v.set("state", Value::Bool(self.state));
        v.set("models", Value::Bool(self.models));
        if !self.files.is_empty() {
            v.set("files", self.files.to_json());
        }
        if !self.http.is_empty() {
            v.set("http", Value::from(self.http.clone()));
        }
        v
    }
}

/// Handler is a function setup registered, wrapped to take the handle the
/// host passes and to return the export's result ([`outcome`]). The wrapper
/// is compiled with the function, so that running it is one indirect call
/// that returns an i32, and no hook's `Result` travels back through
/// [`dispatch`].
struct Handler {
    kind: Kind,
    run: Box<dyn Fn(i32) -> i32>,
}

impl Handler {
    fn turn(f: impl Fn(&Turn) -> Result<()> + 'static) -> Handler {
        Handler { kind: Kind::Turn, run: Box::new(move |ctx| outcome(f(&Turn::new(ctx)))) }
    }

    fn step(f: impl Fn(&Step) -> Result<()> + 'static) -> Handler {
        Handler { kind: Kind::Step, run: Box::new(move |ctx| outcome(f(&Step::new(ctx)))) }
    }

    fn tool_call(f: impl Fn(&ToolCall) -> Result<()> + 'static) -> Handler {
        Handler { kind: Kind::ToolCall, run: Box::new(move |ctx| outcome(f(&ToolCall::new(ctx)))) }
    }

    fn tool(f: impl Fn(&ToolCall) -> Result<ToolResult> + 'static) -> Handler {
        let run = move |ctx| {
            let c = ToolCall::new(ctx);
            outcome(f(&c).and_then(|res| c.set_result(&res)))
        };
        Handler { kind: Kind::Tool, run: Box::new(run) }
    }

    fn event(f: impl Fn(&Event) -> Result<()> + 'static) -> Handler {
        Handler { kind: Kind::Event, run: Box::new(move |ctx| outcome(f(&Event::new(ctx)))) }
    }

    fn pending(k: PendingKind) -> Handler {
        Handler { kind: Kind::Pending, run: Box::new(move |ctx| outcome(crate::pending::run(&k, ctx))) }
    }

    fn reply(f: impl Fn(&crate::pending::Reply) -> Result<()> + 'static) -> Handler {
        Handler { kind: Kind::Reply, run: Box::new(move |ctx| outcome(f(&crate::pending::Reply::new(ctx)))) }
    }
}

/// Registration is one thing setup registered, before the host gave it an ID.
struct Registration {
    spec: String,
    name: String, // a tool's name, or a subscription's pattern
    handler: Handler,
}

thread_local! {
    /// The registered hooks, in the order init registered them, with the ID
    /// the host gave each. Only init writes it; a hook borrows it shared
    /// while it runs (see [`dispatch`]). A constant initialiser, so that
    /// reaching it costs no check of whether it is initialised.
    static HOOKS: RefCell<Vec<(i32, Handler)>> = const { RefCell::new(Vec::new()) };
}

/// Api is what the setup function registers through: middleware, tools and
/// event subscriptions, and the extension's config. Registering is allowed
/// only while setup runs.
pub struct Api {
    regs: RefCell<Vec<Registration>>,
    error: RefCell<Option<Error>>,
}

fn middleware_spec(priority: Option<i32>) -> String {
    match priority {
        Some(p) => format!("{{\"priority\":{}}}", p),
        None => String::new(),
    }
}

impl Api {
    fn add(&self, spec: String, name: String, handler: Handler) {
        self.regs.borrow_mut().push(Registration { spec, name, handler });
    }

    /// config returns the extension's `config:` section from the agent's
    /// config (see [`Config`]).
    pub fn config(&self) -> Result<Config> {
        let b = field_bytes(0, CONFIG)?;
        let v = Value::parse(&String::from_utf8_lossy(&b)).map_err(|e| Error::new(format!("config: {}", e)))?;
        Config::new(v)
    }

    /// turn registers a turn middleware at the extension's configured
    /// priority.
    pub fn turn(&self, f: impl Fn(&Turn) -> Result<()> + 'static) {
        self.add(middleware_spec(None), String::new(), Handler::turn(f));
    }

    /// turn_at registers a turn middleware at priority (lower runs outer).
    pub fn turn_at(&self, priority: i32, f: impl Fn(&Turn) -> Result<()> + 'static) {
        self.add(middleware_spec(Some(priority)), String::new(), Handler::turn(f));
    }

    /// step registers a step middleware.
    pub fn step(&self, f: impl Fn(&Step) -> Result<()> + 'static) {
        self.add(middleware_spec(None), String::new(), Handler::step(f));
    }

    /// step_at registers a step middleware at priority.
    pub fn step_at(&self, priority: i32, f: impl Fn(&Step) -> Result<()> + 'static) {
        self.add(middleware_spec(Some(priority)), String::new(), Handler::step(f));
    }

    /// tool_call registers a toolCall middleware: it wraps every tool call
    /// of the agent, whoever implements the tool.
    pub fn tool_call(&self, f: impl Fn(&ToolCall) -> Result<()> + 'static) {
        self.add(middleware_spec(None), String::new(), Handler::tool_call(f));
    }

    /// tool_call_at registers a toolCall middleware at priority.
    pub fn tool_call_at(&self, priority: i32, f: impl Fn(&ToolCall) -> Result<()> + 'static) {
        self.add(middleware_spec(Some(priority)), String::new(), Handler::tool_call(f));
    }

    /// tool registers a tool the agent offers its model, and adds it to the
    /// manifest. An error the tool returns becomes the error result
    /// `tool "name" failed: <the error>`, as a native tool's does, and the
    /// turn goes on.
    pub fn tool(&self, spec: &ToolSpec, f: impl Fn(&ToolCall) -> Result<ToolResult> + 'static) {
        match spec.to_json() {
            Ok(v) => self.add(v.to_string(), spec.name.clone(), Handler::tool(f)),
            Err(e) => {
                self.error.borrow_mut().get_or_insert(e);
            }
        }
    }

    /// subscribe calls f for every event whose topic matches pattern
    /// (`tool.*`), and adds the pattern to the manifest. Events come in an
    /// instance of the module of their own; the host logs f's error.
    pub fn subscribe(&self, pattern: &str, f: impl Fn(&Event) -> Result<()> + 'static) {
        let spec = Value::object().with("pattern", pattern).to_string();
        self.add(spec, pattern.to_string(), Handler::event(f));
    }

    /// reply registers a reply hook (ABI version 2): f reads the model's
    /// reply of every step as the runtime is about to store it, before any
    /// tool it asks for runs. A pending item it opens
    /// ([`crate::pending::Reply::pause`]) is stored in the same commit as
    /// the reply, and the step ends paused.
    pub fn reply(&self, f: impl Fn(&crate::pending::Reply) -> Result<()> + 'static) {
        self.add(middleware_spec(None), String::new(), Handler::reply(f));
    }

    /// pending registers a kind of pending item the extension opens
    /// ([`crate::pending`]), and adds it to the manifest (ABI version 2);
    /// the agent's config must grant it under the extension's `pending:`.
    pub fn pending(&self, k: PendingKind) {
        let (spec, name) = (k.spec(), k.name.clone());
        self.add(spec, name, Handler::pending(k));
    }
}

/// init is `ganglion_init`: it runs setup, declares the manifest with what
/// setup registered, and registers it. The [`extension!`](crate::extension)
/// macro calls it; a guest does not.
#[doc(hidden)]
pub fn init(manifest: Manifest, setup: fn(&Api) -> Result<()>) -> i32 {
    crate::log::install_panic_hook();
    let api = Api { regs: RefCell::new(Vec::new()), error: RefCell::new(None) };
    let mut err = setup(&api).err().map(|e| Error::new(format!("setup: {}", e)));
    if err.is_none() {
        err = api.error.borrow_mut().take();
    }
    let regs = api.regs.into_inner();
    if let Some(e) = err {
        // Say what the module is all the same, without what setup
        // registered, so that a host can still show it.
        sys::manifest(manifest.to_json(Vec::new(), Vec::new(), Vec::new()).to_string().as_bytes());
        return fail(&e);
    }
    let mut hooks: Vec<String> = Vec::new();
    let mut tools: Vec<String> = Vec::new();
    let mut subscribe: Vec<String> = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    for r in &regs {
        let name = match r.handler.kind {
            Kind::Turn => "turn",
            Kind::Reply => "reply",
            Kind::Step => "step",
            Kind::ToolCall => "tool_call",
            Kind::Tool => {
                tools.push(r.name.clone());
                continue;
            }
            Kind::Event => {
                if !subscribe.contains(&r.name) {
                    subscribe.push(r.name.clone());
                }
                continue;
            }
            Kind::Pending => {
                pending.push(r.name.clone());
                continue;
            }
        };
        if !hooks.iter().any(|h| h == name) {
            hooks.push(name.to_string());
        }
    }
    let mut m = manifest.to_json(hooks, tools, subscribe);
    if !pending.is_empty() {
        m.set("pending", pending.into());
    }
    let m = m.to_string();
    let n = sys::manifest(m.as_bytes());
    if n < 0 {
        return fail(&Error::host("manifest", n));
    }
    for r in regs {
        let id = sys::register(r.handler.kind as i32, r.spec.as_bytes());
        if id < 0 {
            return fail(&Error::host("register", id));
        }
        HOOKS.with(|h| h.borrow_mut().push((id, r.handler)));
    }
    0
}

/// outcome is a hook's result as its export returns it: 0 for success,
/// and for the failure its next reported (returning 0 without a result
/// passes the rest's failure on); otherwise 1, with the error's text given
/// to the host.
#[inline(always)]
fn outcome(r: Result<()>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) if e.is_next_failure() => 0,
        Err(e) => fail(&e),
    }
}

/// fail gives the host e's text as the hook's error and returns 1, a
/// hook's failure.
#[cold]
#[inline(never)]
fn fail(e: &Error) -> i32 {
    sys::set_error(e.to_string().as_bytes());
    1
}

/// dispatch runs the handler registered as id for a hook export of kind.
/// It is all a hook call costs in the guest besides the handler's own: a
/// borrow, a search and an indirect call. The handler runs while the table
/// is borrowed shared, and a hook nested in its next (an inner layer of the
/// same instance) borrows it shared again; nothing borrows it mutably after
/// init. The host numbers registrations 1, 2, ... in order today, so
/// the handler at index id - 1 is tried first; any other numbering is
/// searched for.
pub(crate) fn dispatch(kind: Kind, ctx: i32, id: i32) -> i32 {
    HOOKS.with(|hooks| {
        let hooks = hooks.borrow();
        let at = |h: &&(i32, Handler)| h.0 == id && h.1.kind == kind;
        let h = hooks.get((id as u32 as usize).wrapping_sub(1)).filter(at).or_else(|| hooks.iter().find(at));
        match h {
            Some((_, h)) => (h.run)(ctx),
            None => no_hook(kind, id),
        }
    })
}

#[cold]
#[inline(never)]
fn no_hook(kind: Kind, id: i32) -> i32 {
    fail(&Error::new(format!("no hook of kind {} has ID {}", kind as i32, id)))
}

/// Config reads the extension's `config:` section, strictly: a setting of
/// the wrong type, or one that no call read when [`Config::finish`] runs,
/// is a config error the host reports at its place in the agent's config
/// file (`config: $.colour: unknown setting`).
pub struct Config {
    v: Value,
    read: RefCell<Vec<String>>,
}

/// path renders key as a path into the section: `$.tag`, or
/// `$["odd key"]` for a key that is not a plain name.
fn path(key: &str) -> String {
    let plain = !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && !key.starts_with(|c: char| c.is_ascii_digit());
    if plain {
        format!("$.{}", key)
    } else {
        let mut s = String::from("$[");
        crate::json::quote(key, &mut s);
        s.push(']');
        s
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

impl Config {
    fn new(v: Value) -> Result<Config> {
        match v {
            Value::Null | Value::Object(_) => Ok(Config { v, read: RefCell::new(Vec::new()) }),
            other => Err(Error::config("$", format!("want a mapping, not {}", type_name(&other)))),
        }
    }

    /// present reports whether the agent's config gave the extension a
    /// `config:` section.
    pub fn present(&self) -> bool {
        !self.v.is_null()
    }

    fn get(&self, key: &str) -> Option<&Value> {
        self.read.borrow_mut().push(key.to_string());
        match self.v.get(key) {
            Some(Value::Null) | None => None,
            Some(v) => Some(v),
        }
    }

    fn wrong(key: &str, want: &str, v: &Value) -> Error {
        Error::config(&path(key), format!("want {}, not {}", want, type_name(v)))
    }

    /// string returns setting key, "" when it is absent.
    pub fn string(&self, key: &str) -> Result<String> {
        match self.get(key) {
            None => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(v) => Err(Config::wrong(key, "a string", v)),
        }
    }

    /// bool returns setting key, false when it is absent.
    pub fn bool(&self, key: &str) -> Result<bool> {
        match self.get(key) {
            None => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(v) => Err(Config::wrong(key, "a boolean", v)),
        }
    }

    /// int returns setting key, 0 when it is absent.
    pub fn int(&self, key: &str) -> Result<i64> {
        match self.get(key) {
            None => Ok(0),
            Some(v) => v.as_i64().ok_or_else(|| Config::wrong(key, "a whole number", v)),
        }
    }

    /// strings returns setting key, a list of strings, empty when it is absent.
    pub fn strings(&self, key: &str) -> Result<Vec<String>> {
        match self.get(key) {
            None => Ok(Vec::new()),
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, v)| match v {
                    Value::String(s) => Ok(s.clone()),
                    v => Err(Error::config(&format!("{}[{}]", path(key), i), format!("want a string, not {}", type_name(v)))),
                })
                .collect(),
            Some(v) => Err(Config::wrong(key, "a list of strings", v)),
        }
    }

    /// value returns setting key as JSON, for a shape the other readers do
    /// not cover; None when it is absent.
    pub fn value(&self, key: &str) -> Option<Value> {
        self.get(key).cloned()
    }

    /// finish refuses the settings no call has read: call it once every
    /// setting is read, so that a misspelt one fails the load.
    pub fn finish(&self) -> Result<()> {
        if let Value::Object(members) = &self.v {
            let read = self.read.borrow();
            for (k, _) in members {
                if !read.iter().any(|r| r == k) {
                    return Err(Error::config(&path(k), "unknown setting"));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_is_strict() {
        let c = Config::new(Value::parse(r#"{"tag":"t","trace":1,"colour":"red"}"#).unwrap()).unwrap();
        assert_eq!(c.string("tag").unwrap(), "t");
        assert_eq!(c.bool("trace").unwrap_err().to_string(), "config: $.trace: want a boolean, not a number");
        assert_eq!(c.finish().unwrap_err().to_string(), "config: $.colour: unknown setting");
        assert_eq!(path("odd key"), r#"$["odd key"]"#);
        assert_eq!(Config::new(Value::parse("[1]").unwrap()).err().unwrap().to_string(), "config: $: want a mapping, not a list");
    }

    #[test]
    fn dispatch_finds_the_hook_by_id_and_kind() {
        use std::cell::Cell;
        use std::rc::Rc;
        // Which handler ran last, by the ID it was registered as.
        let ran = Rc::new(Cell::new(0));
        let (r1, r2, r3) = (Rc::clone(&ran), Rc::clone(&ran), Rc::clone(&ran));
        HOOKS.with(|h| {
            let mut h = h.borrow_mut();
            // Numbered out of registration order, as another host might.
            h.push((7, Handler::turn(move |_| {
                r1.set(7);
                Ok(())
            })));
            h.push((1, Handler::step(move |_| {
                r2.set(1);
                Err(Error::new("refused"))
            })));
            // A hook nested in this one's next runs while it does.
            h.push((2, Handler::turn(move |_| {
                assert_eq!(dispatch(Kind::Turn, 9, 7), 0);
                r3.set(2);
                Err(Error::next_failed(-4))
            })));
        });
        assert_eq!(dispatch(Kind::Turn, 9, 7), 0);
        assert_eq!(ran.replace(0), 7);
        assert_eq!(dispatch(Kind::Step, 9, 1), 1, "a hook's error fails it");
        assert_eq!(ran.replace(0), 1);
        assert_eq!(dispatch(Kind::Turn, 9, 2), 0, "the failure next reported passes on");
        assert_eq!(ran.replace(0), 2);
        assert_eq!(dispatch(Kind::Step, 9, 7), 1, "no step hook has ID 7");
        assert_eq!(dispatch(Kind::Turn, 9, 3), 1, "no hook has ID 3");
        assert_eq!(ran.get(), 0);
    }

    #[test]
    fn manifest_json() {
        let m = Manifest { state: true, publish: vec!["twin.*".into()], ..Manifest::new("twin", "1.0.0") };
        assert_eq!(
            m.to_json(vec!["turn".into()], vec![], vec!["tool.finished".into()]).to_string(),
            r#"{"name":"twin","version":"1.0.0","abi":2,"hooks":["turn"],"tools":[],"topics":{"publish":["twin.*"],"subscribe":["tool.finished"]},"agents":[],"secrets":[],"state":true,"models":false}"#
        );
    }
}
