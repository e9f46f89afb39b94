//! Requests to the origins the agent's config grants (../ABI.md, "HTTP",
//! version 2).
//!
//! ```no_run
//! use ganglion::http::{Http, HttpRequest, SecretHeader};
//! # fn f(t: &ganglion::Turn) -> ganglion::Result<()> {
//! let res = t.http(&HttpRequest {
//!     method: "POST".into(),
//!     url: "https://moderation.example.com/v1/check".into(),
//!     headers: vec![("Content-Type".into(), "application/json".into())],
//!     secret_headers: vec![SecretHeader { header: "Authorization".into(), secret: "MOD_KEY".into(), prefix: "Bearer ".into() }],
//!     body: Some(r#"{"text":"hi"}"#.into()),
//!     ..HttpRequest::default()
//! })?;
//! # let _ = res.status; Ok(()) }
//! ```

use crate::context::Context;
use crate::error::{Error, Result};
use crate::json::Value;
use crate::sys;

/// HttpRequest is a request to an origin the manifest lists in
/// [`Manifest::http`](crate::Manifest) and the config grants.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HttpRequest {
    /// The method; "" is GET.
    pub method: String,
    /// An absolute http or https URL.
    pub url: String,
    /// The headers, one value each.
    pub headers: Vec<(String, String)>,
    /// Headers set to a secret's value, which the host places: the guest
    /// never reads it. The manifest lists each secret.
    pub secret_headers: Vec<SecretHeader>,
    /// The body as text.
    pub body: Option<String>,
    /// The body in base64 (standard, padded), for one that is not UTF-8.
    pub body_base64: Option<String>,
    /// 0 (or more than is left): what is left of the hook's deadline,
    /// which the request's time counts against.
    pub timeout_ms: i64,
}

/// SecretHeader is a header whose value is `prefix` and the secret's value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SecretHeader {
    /// The header's name, `Authorization`.
    pub header: String,
    /// The secret's name, `MOD_KEY`.
    pub secret: String,
    /// What goes before the value, `Bearer `.
    pub prefix: String,
}

/// HttpResponse is the answer, after the redirects the host followed
/// within the grant. Secrets the request carried read `[secret]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HttpResponse {
    /// The status code.
    pub status: i64,
    /// The headers, several values joined by ", ".
    pub headers: Vec<(String, String)>,
    /// The body, when it is UTF-8.
    pub body: Option<String>,
    /// The body in base64, when it is not.
    pub body_base64: Option<String>,
}

/// Http sends requests from any hook's context.
pub trait Http {
    /// http sends `r` and returns the answer. An origin or method the
    /// config does not grant is `Code::Denied`; a response over the
    /// extension's max_payload `Code::TooLarge`; a failed request or a
    /// redirect out of the grant `Code::Failed`. A hook call sends at most
    /// 16 requests.
    fn http(&self, r: &HttpRequest) -> Result<HttpResponse>;
}

impl<C: Context + ?Sized> Http for C {
    fn http(&self, r: &HttpRequest) -> Result<HttpResponse> {
        let b = sys::http_request(self.handle(), request_json(r).to_string().as_bytes()).map_err(|n| Error::host("http_request", n))?;
        let v = Value::parse(&String::from_utf8_lossy(&b))?;
        let mut res = HttpResponse { status: v.get("status").and_then(Value::as_i64).unwrap_or(0), ..HttpResponse::default() };
        if let Some(Value::Object(members)) = v.get("headers") {
            for (k, h) in members {
                res.headers.push((k.clone(), h.as_str().unwrap_or("").to_string()));
            }
        }
        res.body = v.get("body").and_then(Value::as_str).map(str::to_string);
        res.body_base64 = v.get("body_base64").and_then(Value::as_str).map(str::to_string);
        Ok(res)
    }
}

fn request_json(r: &HttpRequest) -> Value {
    let mut req = Value::object().with("url", r.url.as_str());
    if !r.method.is_empty() {
        req.set("method", Value::from(r.method.as_str()));
    }
    if !r.headers.is_empty() {
        let mut h = Value::object();
        for (k, v) in &r.headers {
            h.set(k, Value::from(v.as_str()));
        }
        req.set("headers", h);
    }
    if !r.secret_headers.is_empty() {
        let mut h = Value::object();
        for s in &r.secret_headers {
            h.set(&s.header, Value::object().with("secret", s.secret.as_str()).with("prefix", s.prefix.as_str()));
        }
        req.set("secret_headers", h);
    }
    if let Some(b) = &r.body {
        req.set("body", Value::from(b.as_str()));
    }
    if let Some(b) = &r.body_base64 {
        req.set("body_base64", Value::from(b.as_str()));
    }
    if r.timeout_ms != 0 {
        req.set("timeout_ms", Value::from_i64(r.timeout_ms));
    }
    req
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_as_the_abi_reads_it() {
        let r = HttpRequest {
            method: "POST".into(),
            url: "https://mod.example/v1".into(),
            headers: vec![("Accept".into(), "text/plain".into())],
            secret_headers: vec![SecretHeader { header: "Authorization".into(), secret: "MOD_KEY".into(), prefix: "Bearer ".into() }],
            body: Some("hi".into()),
            timeout_ms: 500,
            ..HttpRequest::default()
        };
        assert_eq!(
            request_json(&r).to_string(),
            r#"{"url":"https://mod.example/v1","method":"POST","headers":{"Accept":"text/plain"},"secret_headers":{"Authorization":{"secret":"MOD_KEY","prefix":"Bearer "}},"body":"hi","timeout_ms":500}"#
        );
    }
}
