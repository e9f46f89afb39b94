//! The Rust twin of the conformance suite's native extension
//! (extensions/conformance/twin_test.go): the same behaviours, written with
//! the Rust SDK in sdk/rust. Keep it in step with the native and the Go
//! twins; the package doc of extensions/conformance lists what they do.

use std::rc::Rc;

use ganglion::pending::{Action, Outcome, PendingItem, PendingKind};
use ganglion::types::{category, finish, role};
use ganglion::{Api, Context, Error, Manifest, Message, MessageEvent, Result, ToolCall, ToolResult, ToolSpec, TurnResult, Value};

ganglion::extension!(
    Manifest { state: true, publish: vec!["twin.*".to_string()], ..Manifest::new("twin", "1.0.0") },
    setup
);

/// Cfg is the extension's config: section.
struct Cfg {
    /// Names this configured instance in answers, events and errors.
    tag: String,
    /// Publishes twin.order as each hook enters and leaves, and wraps the
    /// turn's response in the tag.
    trace: bool,
    /// The tools a step hides when the input starts with "hide".
    hide: Vec<String>,
    /// Registers the tool twin_echo.
    echo: bool,
}

/// State is the extension's state per instance: {"turns": n, "tools": [...]}.
struct State {
    turns: i64,
    tools: Vec<String>,
}

impl State {
    fn load(c: &dyn Context) -> Result<State> {
        let v = c.state()?.unwrap_or(Value::Null);
        let tools = match v.get("tools").and_then(Value::as_array) {
            Some(a) => a.iter().filter_map(|t| t.as_str().map(String::from)).collect(),
            None => Vec::new(),
        };
        Ok(State { turns: v.get("turns").and_then(Value::as_i64).unwrap_or(0), tools })
    }

    fn save(&self, c: &dyn Context) -> Result<()> {
        let mut v = Value::object().with("turns", self.turns);
        if !self.tools.is_empty() {
            v.set("tools", Value::from(self.tools.clone()));
        }
        c.set_state(&v)
    }
}

/// command splits the input into its first two words.
fn command(input: &str) -> (String, String) {
    let mut f = input.split_whitespace();
    (f.next().unwrap_or("").to_string(), f.next().unwrap_or("").to_string())
}

fn setup(api: &Api) -> Result<()> {
    let c = api.config()?;
    let cfg = Cfg { tag: c.string("tag")?, trace: c.bool("trace")?, hide: c.strings("hide")?, echo: c.bool("echo")? };
    c.finish()?;
    if cfg.tag.is_empty() {
        return Err(Error::new("config: tag is required"));
    }
    let cfg = Rc::new(cfg);
    register_pending(api, &cfg);

    let trace = {
        let cfg = cfg.clone();
        move |c: &dyn Context, hook: &str, at: &str| -> Result<()> {
            if !cfg.trace {
                return Ok(());
            }
            c.publish("twin.order", &Value::object().with("tag", cfg.tag.as_str()).with("hook", hook).with("at", at))
        }
    };

    {
        let (cfg, trace) = (cfg.clone(), trace.clone());
        api.turn(move |t| {
            let input = t.input_text()?;
            let (word, arg) = command(&input);
            let mut st = State::load(t)?;
            st.turns += 1;
            st.save(t)?;
            trace(t, "turn", "enter")?;
            match (word.as_str(), arg.as_str()) {
                ("stop", _) => {
                    return t.set_result(&TurnResult::text(format!("{} answered: {}", cfg.tag, input)));
                }
                ("fail", "turn") => return Err(Error::new(format!("{}: turn failed on purpose", cfg.tag))),
                ("panic", "turn") => panic!("{}: turn panicked on purpose", cfg.tag),
                ("rewrite", _) => {
                    let mut in_ = t.input()?;
                    in_.text = format!("rewritten: {}", in_.text);
                    t.set_input(&in_)?;
                }
                ("edit", _) => {
                    t.emit(&MessageEvent::Append(Message::text(role::SYSTEM, format!("{}: note before the input", cfg.tag))))?;
                }
                _ => {}
            }
            t.next()?;
            if word == "twice" {
                t.next()?;
            }
            if word == "fail" && arg == "turn-after" {
                return Err(Error::new(format!("{}: turn failed after next", cfg.tag)));
            }
            trace(t, "turn", "leave")?;
            if cfg.trace {
                let mut r = t.result()?;
                r.response.content = format!("{}({})", cfg.tag, r.response.content);
                t.set_result(&r)?;
            }
            t.publish("twin.turn", &Value::object().with("tag", cfg.tag.as_str()).with("turns", st.turns))
        });
    }

    {
        let (cfg, trace) = (cfg.clone(), trace.clone());
        api.step(move |s| {
            let (word, arg) = command(&s.input_text()?);
            trace(s, "step", "enter")?;
            match (word.as_str(), arg.as_str()) {
                ("hide", _) => {
                    let keep: Vec<String> = s.tools()?.into_iter().filter(|n| !cfg.hide.contains(n)).collect();
                    s.set_tools(&keep)?;
                }
                ("edit", _) if s.index()? == 1 => {
                    let mut last = s.message(-1)?;
                    last.content = format!("edited: {}", last.content);
                    s.emit(&MessageEvent::Replace(last.id.clone(), last))?;
                    let first = s.message(0)?;
                    s.emit(&MessageEvent::Remove(first.id))?;
                }
                ("fail", "step") => return Err(Error::new(format!("{}: step failed on purpose", cfg.tag))),
                _ => {}
            }
            s.next()?;
            if word == "ask" && s.index()? == 1 {
                let req = Value::object().with("tag", cfg.tag.as_str()).with("question", "Which one?");
                s.pause(&PendingItem::new("twin_question", req))?;
            }
            if (word == "more" && s.index()? == 1) || word == "halt" {
                let mut r = s.result()?;
                if word == "more" {
                    r.continue_ = true;
                } else {
                    r.stop = finish::MAX_STEPS.to_string();
                }
                s.set_result(&r)?;
            }
            trace(s, "step", "leave")
        });
    }

    {
        let (cfg, trace) = (cfg.clone(), trace.clone());
        api.tool_call(move |c| {
            // Malformed arguments have no mode.
            let mode = c.args_json().ok().and_then(|v| v.get("mode").and_then(Value::as_str).map(String::from)).unwrap_or_default();
            if mode == "ask" && c.resuming()?.is_none() {
                let req = Value::object().with("tag", cfg.tag.as_str()).with("tool", c.name()?);
                c.pause(&PendingItem::new("twin_ask", req))?;
                return c.set_result(&ToolResult::text(format!("{} waits for a human", cfg.tag)));
            }
            trace(c, "tool_call", "enter")?;
            match mode.as_str() {
                "fail" => return Err(Error::new(format!("{}: tool call failed on purpose", cfg.tag))),
                "args" => c.set_args(&Value::object().with("text", format!("changed by {}", cfg.tag)).to_string())?,
                _ => {}
            }
            c.next()?;
            if mode == "replace" {
                let r = c.result()?;
                c.set_result(&ToolResult::text(format!("{} replaced: {}", cfg.tag, r.content)))?;
            }
            trace(c, "tool_call", "leave")
        });
    }

    if cfg.echo {
        let spec = ToolSpec {
            name: "twin_echo".into(),
            description: "Echoes its text.".into(),
            parameters: r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}"#.into(),
            category: category::READ.into(),
        };
        let cfg = cfg.clone();
        api.tool(&spec, move |c| echo(&cfg, c));
    }

    // The guest cannot tell which agent an event belongs to: it records
    // every tool.finished it is given (see the suite's "events of another
    // agent" case).
    api.subscribe("tool.finished", |e| {
        let data = e.data()?;
        let tool = data.get("tool").and_then(Value::as_str).unwrap_or("");
        let content = data.get("content").and_then(Value::as_str).unwrap_or("");
        let mut st = State::load(e)?;
        st.tools.push(format!("{}: {}", tool, content));
        st.save(e)
    });
    Ok(())
}

/// echo is the tool twin_echo.
fn echo(cfg: &Cfg, c: &ToolCall) -> Result<ToolResult> {
    let args = c.args_json()?;
    let text = args.get("text").and_then(Value::as_str).unwrap_or("");
    if text.is_empty() {
        return Err(Error::new("twin_echo: the text is empty"));
    }
    let k = c.idempotency_key()?;
    if k.len() != 35 || !k.starts_with("gk-") {
        return Err(Error::new(format!("twin_echo: no idempotency key: {}", k)));
    }
    Ok(ToolResult::text(format!("{} echoes {}", cfg.tag, text)))
}

/// register_pending registers the pending kinds twin_ask and twin_question.
fn register_pending(api: &Api, cfg: &Rc<Cfg>) {
    let (c1, c2) = (cfg.clone(), cfg.clone());
    api.pending(
        PendingKind::new("twin_ask", move |_p, act: &Action| match (act.kind.as_str(), act.value.as_str()) {
            ("answer", "yes") => Ok(Outcome::answered("yes", &format!("{}: approved", c1.tag))),
            ("answer", "no") => Ok(Outcome::rejected("no", &format!("{}: denied", c1.tag))),
            _ => Err(Error::new(format!("{}: answer yes or no, not {:?}", c1.tag, act.value))),
        })
        .resume(move |r| {
            if r.item()?.answer != "yes" {
                return r.set_result(&ToolResult { content: format!("{}: the call was denied", c2.tag), is_error: true });
            }
            r.run().map(|_| ())
        }),
    );
    let cfg = cfg.clone();
    api.pending(PendingKind::new("twin_question", move |_p, act: &Action| {
        if act.kind != "answer" {
            return Err(Error::new(format!("{}: a question takes an answer", cfg.tag)));
        }
        if act.value.trim().is_empty() {
            return Err(Error::new(format!("{}: the answer is empty", cfg.tag)));
        }
        Ok(Outcome::answered(&act.value, &format!("{} got: {}", cfg.tag, act.value)))
    }));
}
