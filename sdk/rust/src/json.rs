//! A small JSON value, parser and writer: the ABI's structured values are
//! JSON, and the crate depends on nothing outside the standard library.
//!
//! Numbers keep the text they were read from, so a value read from the host
//! and written back is the same; objects keep their keys in order.

use std::fmt;

/// Value is one JSON value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, as its JSON text (`12`, `-0.5`, `1e3`).
    Number(String),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<Value>),
    /// An object: its members in order. A key appears once.
    Object(Vec<(String, Value)>),
}

impl Default for Value {
    fn default() -> Self {
        Value::Null
    }
}

impl Value {
    /// parse reads one JSON value from `text`; only white space may follow it.
    pub fn parse(text: &str) -> Result<Value, ParseError> {
        let mut p = Parser { b: text.as_bytes(), i: 0, depth: 0 };
        p.space();
        let v = p.value()?;
        p.space();
        if p.i != p.b.len() {
            return Err(p.err("data after the JSON value"));
        }
        Ok(v)
    }

    /// object returns an empty object.
    pub fn object() -> Value {
        Value::Object(Vec::new())
    }

    /// from_i64 returns n as a number.
    pub fn from_i64(n: i64) -> Value {
        Value::Number(n.to_string())
    }

    /// with sets member `key` of an object to `v`, replacing one of that
    /// key, and returns the object. On any other value it does nothing.
    pub fn with(mut self, key: &str, v: impl Into<Value>) -> Value {
        self.set(key, v.into());
        self
    }

    /// set sets member `key` of an object to `v`, replacing one of that key.
    /// On any other value it does nothing.
    pub fn set(&mut self, key: &str, v: Value) {
        if let Value::Object(members) = self {
            for m in members.iter_mut() {
                if m.0 == key {
                    m.1 = v;
                    return;
                }
            }
            members.push((key.to_string(), v));
        }
    }

    /// get returns member `key` of an object; None for a missing key or a
    /// value that is not an object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(members) => members.iter().find(|m| m.0 == key).map(|m| &m.1),
            _ => None,
        }
    }

    /// as_str returns a string's text.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// as_bool returns a boolean's value.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// as_i64 returns a number that is a whole number in range of i64.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Number(n) => n.parse::<i64>().ok().or_else(|| {
                let f = n.parse::<f64>().ok()?;
                if f.fract() == 0.0 && f.abs() < 9.0e15 {
                    Some(f as i64)
                } else {
                    None
                }
            }),
            _ => None,
        }
    }

    /// as_f64 returns a number's value.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => n.parse::<f64>().ok(),
            _ => None,
        }
    }

    /// as_array returns an array's elements.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    /// is_null reports whether the value is `null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// str_or_empty returns member `key` as a string, or "" when it is
    /// missing, null or not a string.
    pub(crate) fn str_or_empty(&self, key: &str) -> String {
        self.get(key).and_then(Value::as_str).unwrap_or("").to_string()
    }

    /// write appends the value's JSON text to out, with no white space.
    pub fn write(&self, out: &mut String) {
        match self {
            Value::Null => out.push_str("null"),
            Value::Bool(true) => out.push_str("true"),
            Value::Bool(false) => out.push_str("false"),
            Value::Number(n) => out.push_str(n),
            Value::String(s) => quote(s, out),
            Value::Array(a) => {
                out.push('[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    v.write(out);
                }
                out.push(']');
            }
            Value::Object(members) => {
                out.push('{');
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    quote(k, out);
                    out.push(':');
                    v.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// The value's JSON text, with no white space.
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.write(&mut s);
        f.write_str(&s)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::String(s.to_string())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::String(s)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

impl From<i64> for Value {
    fn from(n: i64) -> Value {
        Value::from_i64(n)
    }
}

impl From<i32> for Value {
    fn from(n: i32) -> Value {
        Value::from_i64(n as i64)
    }
}

impl From<Vec<Value>> for Value {
    fn from(a: Vec<Value>) -> Value {
        Value::Array(a)
    }
}

impl From<Vec<String>> for Value {
    fn from(a: Vec<String>) -> Value {
        Value::Array(a.into_iter().map(Value::String).collect())
    }
}

/// quote appends s to out as a JSON string, quotes included.
pub fn quote(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(HEX[(c as usize) >> 4] as char);
                out.push(HEX[(c as usize) & 15] as char);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// ParseError is malformed JSON: what is wrong, and the byte offset where.
#[derive(Clone, Debug, PartialEq)]
pub struct ParseError {
    /// What is wrong.
    pub msg: String,
    /// The offset in bytes of the text at fault.
    pub offset: usize,
}

/// "json: MSG at offset N".
impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "json: {} at offset {}", self.msg, self.offset)
    }
}

impl std::error::Error for ParseError {}

/// MAX_DEPTH bounds the nesting of arrays and objects the parser follows.
const MAX_DEPTH: usize = 512;

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
    depth: usize,
}

impl<'a> Parser<'a> {
    fn err(&self, msg: &str) -> ParseError {
        ParseError { msg: msg.to_string(), offset: self.i }
    }

    fn space(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn literal(&mut self, word: &str, v: Value) -> Result<Value, ParseError> {
        if self.b[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Ok(v)
        } else {
            Err(self.err("invalid literal"))
        }
    }

    fn value(&mut self) -> Result<Value, ParseError> {
        if self.i >= self.b.len() {
            return Err(self.err("unexpected end of input"));
        }
        match self.b[self.i] {
            b'n' => self.literal("null", Value::Null),
            b't' => self.literal("true", Value::Bool(true)),
            b'f' => self.literal("false", Value::Bool(false)),
            b'"' => self.string().map(Value::String),
            b'[' => self.nested(|p| {
                let mut a = Vec::new();
                p.space();
                if p.eat(b']') {
                    return Ok(Value::Array(a));
                }
                loop {
                    p.space();
                    a.push(p.value()?);
                    p.space();
                    if p.eat(b']') {
                        return Ok(Value::Array(a));
                    }
                    if !p.eat(b',') {
                        return Err(p.err("want , or ] in an array"));
                    }
                }
            }),
            b'{' => self.nested(|p| {
                let mut members: Vec<(String, Value)> = Vec::new();
                p.space();
                if p.eat(b'}') {
                    return Ok(Value::Object(members));
                }
                loop {
                    p.space();
                    if p.i >= p.b.len() || p.b[p.i] != b'"' {
                        return Err(p.err("want a string key in an object"));
                    }
                    let k = p.string()?;
                    p.space();
                    if !p.eat(b':') {
                        return Err(p.err("want : after an object key"));
                    }
                    p.space();
                    let v = p.value()?;
                    match members.iter_mut().find(|m| m.0 == k) {
                        Some(m) => m.1 = v,
                        None => members.push((k, v)),
                    }
                    p.space();
                    if p.eat(b'}') {
                        return Ok(Value::Object(members));
                    }
                    if !p.eat(b',') {
                        return Err(p.err("want , or } in an object"));
                    }
                }
            }),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(self.err("invalid character")),
        }
    }

    fn nested(&mut self, f: impl FnOnce(&mut Self) -> Result<Value, ParseError>) -> Result<Value, ParseError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.err("nested too deeply"));
        }
        self.depth += 1;
        self.i += 1;
        let v = f(self);
        self.depth -= 1;
        v
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.i < self.b.len() && self.b[self.i] == c {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while self.i < self.b.len() && self.b[self.i].is_ascii_digit() {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Result<Value, ParseError> {
        let start = self.i;
        self.eat(b'-');
        if self.eat(b'0') {
            if self.i < self.b.len() && self.b[self.i].is_ascii_digit() {
                return Err(self.err("a number with a leading zero"));
            }
        } else if self.digits() == 0 {
            return Err(self.err("invalid number"));
        }
        if self.eat(b'.') && self.digits() == 0 {
            return Err(self.err("invalid number"));
        }
        if self.eat(b'e') || self.eat(b'E') {
            if !self.eat(b'+') {
                self.eat(b'-');
            }
            if self.digits() == 0 {
                return Err(self.err("invalid number"));
            }
        }
        // The bytes are ASCII: the text is valid UTF-8.
        Ok(Value::Number(String::from_utf8_lossy(&self.b[start..self.i]).into_owned()))
    }

    fn hex4(&mut self) -> Result<u32, ParseError> {
        if self.i + 4 > self.b.len() {
            return Err(self.err("a short \\u escape"));
        }
        let mut n = 0u32;
        for k in 0..4 {
            let d = (self.b[self.i + k] as char).to_digit(16).ok_or_else(|| self.err("invalid \\u escape"))?;
            n = n * 16 + d;
        }
        self.i += 4;
        Ok(n)
    }

    fn string(&mut self) -> Result<String, ParseError> {
        self.i += 1; // the opening quote
        let mut out: Vec<u8> = Vec::new();
        loop {
            if self.i >= self.b.len() {
                return Err(self.err("unterminated string"));
            }
            let c = self.b[self.i];
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    if self.i >= self.b.len() {
                        return Err(self.err("unterminated string"));
                    }
                    let e = self.b[self.i];
                    self.i += 1;
                    let ch = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hi = self.hex4()?;
                            let cp = if (0xD800..0xDC00).contains(&hi) {
                                if self.b[self.i..].starts_with(b"\\u") {
                                    self.i += 2;
                                    let lo = self.hex4()?;
                                    if (0xDC00..0xE000).contains(&lo) {
                                        0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                                    } else {
                                        0xFFFD
                                    }
                                } else {
                                    0xFFFD
                                }
                            } else {
                                hi
                            };
                            char::from_u32(cp).unwrap_or('\u{FFFD}')
                        }
                        _ => {
                            self.i -= 1;
                            return Err(self.err("invalid escape"));
                        }
                    };
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                }
                c if c < 0x20 => {
                    self.i -= 1;
                    return Err(self.err("a control character in a string"));
                }
                c => out.push(c),
            }
        }
        String::from_utf8(out).map_err(|_| self.err("invalid UTF-8 in a string"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        for text in [
            r#"{"a":1,"b":[true,false,null],"c":"x\"y\\z\n","d":-0.5e3,"e":{}}"#,
            r#"[]"#,
            r#""\u00e9\ud83d\ude00""#,
        ] {
            let v = Value::parse(text).unwrap();
            let again = Value::parse(&v.to_string()).unwrap();
            assert_eq!(v, again, "{}", text);
        }
        assert_eq!(Value::parse(r#" {"a" : [1, 2]} "#).unwrap().to_string(), r#"{"a":[1,2]}"#);
    }

    #[test]
    fn refusals() {
        for (text, want) in [
            ("", "json: unexpected end of input at offset 0"),
            ("{} x", "json: data after the JSON value at offset 3"),
            ("[1,]", "json: invalid character at offset 3"),
            ("01", "json: a number with a leading zero at offset 1"),
            ("{\"a\" 1}", "json: want : after an object key at offset 5"),
            ("\"\x01\"", "json: a control character in a string at offset 1"),
        ] {
            assert_eq!(Value::parse(text).unwrap_err().to_string(), want, "{:?}", text);
        }
    }

    #[test]
    fn control_characters_are_escaped() {
        let mut s = String::new();
        quote("a\u{1}b", &mut s);
        assert_eq!(s, r#""a\u0001b""#);
    }
}
