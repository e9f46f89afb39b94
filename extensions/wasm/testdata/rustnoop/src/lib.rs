//! The Rust twin of noop.wat and testdata/gonoop, for benchmarks: turn,
//! step and toolCall middleware that call next. With config {read: true},
//! each first reads one context field: the input text, or the tool name.

use ganglion::{Api, Manifest, Result};

ganglion::extension!(Manifest::new("rustnoop", "1.0.0"), setup);

fn setup(api: &Api) -> Result<()> {
    let cfg = api.config()?;
    let read = cfg.bool("read")?;
    cfg.finish()?;
    api.turn(move |t| {
        if read {
            t.input_text()?;
        }
        t.next()
    });
    api.step(move |s| {
        if read {
            s.input_text()?;
        }
        s.next()
    });
    api.tool_call(move |c| {
        if read {
            c.name()?;
        }
        c.next()
    });
    Ok(())
}
