//! rust-question: the [USER_QUESTION] protocol of the built-in extension
//! "protocol" (extensions/protocol), as a WebAssembly guest written with the
//! Rust SDK. A reply hook reads the model's reply before the runtime stores
//! it: each valid USER_QUESTION block becomes a pending item of kind
//! "question", stored in the same commit as the reply that asks, and the
//! turn pauses. A step hook, once the step is done, sends a malformed block
//! back to the model as a correction, and too many in a row pause the turn
//! on an "intervention" item a human answers with guidance. README.md says
//! what of the native extension it covers.

mod block;
mod question;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use ganglion::pending::{Action, Outcome, PendingCall, PendingItem, PendingKind};
use ganglion::types::role;
use ganglion::pending::Reply;
use ganglion::{Api, Context, Error, Manifest, Message, MessageEvent, Result, Step, Value};

use block::Found;
use question::{quote, Question};

ganglion::extension!(
    Manifest { publish: vec!["protocol.mistake".to_string()], ..Manifest::new("rust-question", "1.0.0") },
    setup
);

/// The kinds of the pending items the extension opens.
const ITEM_QUESTION: &str = "question";
const ITEM_INTERVENTION: &str = "intervention";

/// Settings are the extension's config, as the native extension's:
///
/// ```yaml
/// config:
///   timeout: 1h            # how long a question waits (default 1h)
///   question_timeout: 30m  # overrides timeout
///   mistake_limit: 3       # malformed replies in a row before a human is asked
/// ```
struct Settings {
    timeout_ms: i64,
    mistake_limit: i64,
}

thread_local! {
    /// Consecutive mistakes per running turn ("instance\0turn"). A turn's
    /// steps run inside its turn hook's next, in this instance; the turn
    /// hook forgets the count when the turn ends.
    static MISTAKES: RefCell<HashMap<String, i64>> = RefCell::new(HashMap::new());
}

fn setup(api: &Api) -> Result<()> {
    let c = api.config()?;
    let timeout = duration(&c, "timeout", 3_600_000)?;
    let timeout_ms = duration(&c, "question_timeout", timeout)?;
    let mistake_limit = match c.int("mistake_limit")? {
        0 => 3,
        n if n < 0 => return Err(Error::config("$.mistake_limit", format!("mistake_limit must be at least 1, got {}", n))),
        n => n,
    };
    c.finish()?;
    let s = Rc::new(Settings { timeout_ms, mistake_limit });

    api.pending(PendingKind::new(ITEM_QUESTION, resolve_question).expire(expire_question));
    api.pending(PendingKind::new(ITEM_INTERVENTION, resolve_intervention).expire(|_| Ok(timeout_open())));
    api.turn(|t| {
        let key = format!("{}\0{}", t.instance()?, t.turn_id()?);
        let r = t.next();
        MISTAKES.with(|m| m.borrow_mut().remove(&key));
        r
    });
    let s2 = s.clone();
    api.reply(move |r| on_reply(&s2, r));
    api.step(move |st| step(&s, st));
    Ok(())
}

/// duration reads setting key, a Go duration ("30m", "1h30m", "500ms"), in
/// milliseconds (a part of one counts as one); def when it is absent.
fn duration(c: &ganglion::Config, key: &str, def: i64) -> Result<i64> {
    let s = c.string(key)?;
    if s.is_empty() {
        return Ok(def);
    }
    match parse_duration(&s) {
        Some(ns) if ns > 0 => Ok((ns + 999_999) / 1_000_000),
        _ => Err(Error::config(&format!("$.{}", key), format!("{} must be a positive duration such as 30m or 2h, got {}", key, quote(&s)))),
    }
}

/// parse_duration parses a Go duration into nanoseconds: an optional sign,
/// then numbers (with an optional fraction) each followed by a unit.
fn parse_duration(s: &str) -> Option<i64> {
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let n = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let num = &rest[..n];
        if num.is_empty() || num == "." {
            return None;
        }
        let v: f64 = num.parse().ok()?;
        rest = &rest[n..];
        let u = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let scale: f64 = match &rest[..u] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[u..];
        total += v * scale;
    }
    if total > i64::MAX as f64 {
        return None;
    }
    Some(if neg { -(total as i64) } else { total as i64 })
}

/// problems are the problems of the blocks found, as the correction lists
/// them.
fn problems(found: &[Found]) -> Vec<String> {
    found
        .iter()
        .filter_map(|f| match f {
            Found::Problem(p) => Some(format!("- {}", p)),
            Found::Question(_) => None,
        })
        .collect()
}

/// on_reply reads the model's reply before it is stored: when all its
/// blocks are well formed, each question becomes a pending item stored in
/// the same commit as the reply, and the turn pauses after the step. A
/// reply with a problem opens nothing: the step hook corrects it.
fn on_reply(s: &Settings, r: &Reply) -> Result<()> {
    let found = block::parse(&r.message()?.content);
    if !problems(&found).is_empty() {
        return Ok(());
    }
    for f in found {
        if let Found::Question(q) = f {
            let mut it = PendingItem::new(ITEM_QUESTION, q.to_json());
            it.required = q.required;
            it.timeout_ms = s.timeout_ms;
            r.pause(&it)?;
        }
    }
    Ok(())
}

/// step runs the model, then sends the problems of its reply's blocks back
/// to the model (the reply hook has paused on its questions).
fn step(s: &Settings, st: &Step) -> Result<()> {
    st.next()?;
    let text = reply(st)?.map(|m| m.content).unwrap_or_default();
    let key = format!("{}\0{}", st.instance()?, st.turn_id()?);
    let problems = problems(&block::parse(&text));
    if !problems.is_empty() {
        return mistake(s, st, &key, problems);
    }
    MISTAKES.with(|m| m.borrow_mut().remove(&key));
    Ok(())
}

/// reply returns the step's reply: the conversation's last assistant
/// message (tool results may follow it).
fn reply(st: &Step) -> Result<Option<Message>> {
    let n = st.messages_len()?;
    for i in (0..n).rev() {
        let m = st.message(i)?;
        if m.role == role::ASSISTANT {
            return Ok(Some(m));
        }
    }
    Ok(None)
}

/// mistake sends the problems back to the model, or, at the limit, pauses
/// for a human.
fn mistake(s: &Settings, st: &Step, key: &str, problems: Vec<String>) -> Result<()> {
    let n = MISTAKES.with(|m| {
        let mut m = m.borrow_mut();
        let n = m.entry(key.to_string()).or_insert(0);
        *n += 1;
        *n
    });
    let data = Value::object()
        .with("count", Value::from_i64(n))
        .with("errors", problems.clone())
        .with("step", Value::from_i64(st.index()?))
        .with("turn_id", st.turn_id()?);
    st.publish("protocol.mistake", &data)?;
    if n >= s.mistake_limit {
        // The native request is a Go map: its keys are sorted.
        let req = Value::object().with("errors", problems).with("mistakes", Value::from_i64(n));
        st.pause(&PendingItem::new(ITEM_INTERVENTION, req))?;
        MISTAKES.with(|m| m.borrow_mut().remove(key));
        return Ok(());
    }
    let text = format!(
        "Your last message has protocol block problems, so none of its blocks was acted on:\n{}\nWrite the blocks again, corrected.",
        problems.join("\n")
    );
    let mut m = Message::text(role::USER, text);
    m.metadata = Value::object().with("protocol_correction", Value::from_i64(n));
    st.emit(&MessageEvent::Append(m))?;
    let mut r = st.result()?;
    r.continue_ = true;
    st.set_result(&r)
}

/// past_tense names what an action did: "skipped", "provided".
fn past_tense(kind: &str) -> String {
    match kind {
        "skip" => "skipped".into(),
        "edit" => "edited".into(),
        k => format!("{}ed", k.strip_suffix('e').unwrap_or(k)),
    }
}

/// with_default ends a message with what the model goes on with.
fn with_default(prefix: &str, def: &str) -> String {
    if def.is_empty() {
        return format!("{}; it has no default: decide yourself.", prefix);
    }
    format!("{}; go on with the default: {}", prefix, def)
}

fn question_of(p: &PendingCall) -> Result<Question> {
    Ok(Question::from_json(&p.item()?.request))
}

fn resolve_question(p: &PendingCall, act: &Action) -> Result<Outcome> {
    let q = question_of(p)?;
    match act.kind.as_str() {
        "answer" => {
            let a = q.validate_answer(&act.value).map_err(Error::new)?;
            let msg = format!("Answer to your question {}: {}", quote(&q.question), a);
            Ok(Outcome::answered(&a, &msg))
        }
        "skip" => {
            let a = q.skip().map_err(Error::new)?;
            let message = with_default(&format!("Your question {} was skipped", quote(&q.question)), &a);
            Ok(Outcome { status: "skipped".into(), answer: a, message, ..Outcome::default() })
        }
        k => Err(Error::new(format!("a question is answered or skipped, not {}", past_tense(k)))),
    }
}

fn timeout_open() -> Outcome {
    Outcome { status: "timeout".into(), keep_open: true, ..Outcome::default() }
}

/// expire_question: a required question stays open with status timeout;
/// an optional one resumes with its default.
fn expire_question(p: &PendingCall) -> Result<Outcome> {
    let q = question_of(p)?;
    if q.required {
        return Ok(timeout_open());
    }
    let message = with_default(&format!("Nobody answered your question {} in time", quote(&q.question)), &q.default);
    Ok(Outcome { status: "timeout".into(), answer: q.default, message, ..Outcome::default() })
}

fn resolve_intervention(_p: &PendingCall, act: &Action) -> Result<Outcome> {
    if act.kind != "answer" {
        return Err(Error::new("answer an intervention with guidance for the model"));
    }
    let g = act.value.trim();
    if g.is_empty() {
        return Err(Error::new("guidance is required"));
    }
    Ok(Outcome::answered(g, &format!("Your protocol blocks failed several times in a row. Guidance from the user: {}", g)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30m"), Some(1_800_000_000_000));
        assert_eq!(parse_duration("1h30m"), Some(5_400_000_000_000));
        assert_eq!(parse_duration("1.5s"), Some(1_500_000_000));
        assert_eq!(parse_duration("50ms"), Some(50_000_000));
        assert_eq!(parse_duration("0"), Some(0));
        for bad in ["", "m", "10", "1d", "-", ".s"] {
            assert_eq!(parse_duration(bad), None, "{:?}", bad);
        }
        assert_eq!(parse_duration("-1m"), Some(-60_000_000_000));
    }

    #[test]
    fn past_tenses() {
        assert_eq!(past_tense("provide"), "provided");
        assert_eq!(past_tense("reject"), "rejected");
        assert_eq!(past_tense("skip"), "skipped");
        assert_eq!(past_tense("edit"), "edited");
    }
}
