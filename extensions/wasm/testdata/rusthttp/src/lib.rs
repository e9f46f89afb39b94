//! The Rust twin of testdata/gohttp: its turn hook reads the turn's input
//! as a request, {"method", "url", "secret", "body"}, sends it (with the
//! secret MOD_KEY in Authorization when "secret" is true) and answers the
//! turn with "STATUS BODY"; a refused request fails the hook with
//! "[CODE] MESSAGE".

use ganglion::http::{Http, HttpRequest, SecretHeader};
use ganglion::{Api, Error, Manifest, Result, TurnResult, Value};

ganglion::extension!(
    Manifest {
        secrets: vec!["MOD_KEY".to_string()],
        http: vec!["http://granted.example".to_string(), "http://get.example:8080".to_string()],
        ..Manifest::new("rusthttp", "1.0.0")
    },
    setup
);

fn setup(api: &Api) -> Result<()> {
    api.turn(|t| {
        let v = Value::parse(&t.input_text()?)?;
        let text = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let mut req = HttpRequest {
            method: text("method"),
            url: text("url"),
            headers: vec![("X-Guest".to_string(), "rusthttp".to_string())],
            ..HttpRequest::default()
        };
        if !text("body").is_empty() {
            req.body = Some(text("body"));
        }
        if v.get("secret").and_then(Value::as_bool) == Some(true) {
            req.secret_headers = vec![SecretHeader { header: "Authorization".into(), secret: "MOD_KEY".into(), prefix: "Bearer ".into() }];
        }
        match t.http(&req) {
            Ok(res) => t.set_result(&TurnResult::text(format!("{} {}", res.status, res.body.unwrap_or_default()))),
            Err(e) => match e.code() {
                Some(c) => Err(Error::new(format!("[{}] {}", c.name(), e.message()))),
                None => Err(e),
            },
        }
    });
    Ok(())
}
