//! The value of a USER_QUESTION block, the rules an answer must keep, and
//! the two pieces of Go's behaviour the native messages depend on: `%q`
//! quoting ([`quote`]) and `strings.EqualFold` ([`equal_fold`]).

use ganglion::Value;

/// The categories of a question, as the block's value is matched (ignoring
/// case) and as the request stores them.
pub const CATEGORIES: [&str; 4] = ["business", "clarification", "choice", "confirmation"];

/// Question is the value of a valid USER_QUESTION block, and the request
/// of its pending item.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Question {
    /// One of [`CATEGORIES`].
    pub category: String,
    /// The question's text; continuation lines joined with "\n".
    pub question: String,
    /// When not empty, the only answers accepted; distinct ignoring case
    /// and surrounding blanks.
    pub options: Vec<String>,
    /// The answer an optional question takes when skipped or expired; with
    /// options, one of them as written there.
    pub default: String,
    /// A required question needs an answer and cannot be skipped.
    pub required: bool,
}

impl Question {
    /// to_json writes the request as the native extension's Go struct
    /// marshals: the same members in the same order, options and default
    /// left out when empty.
    pub fn to_json(&self) -> Value {
        let mut v = Value::object().with("category", self.category.as_str()).with("question", self.question.as_str());
        if !self.options.is_empty() {
            v.set("options", Value::from(self.options.clone()));
        }
        if !self.default.is_empty() {
            v.set("default", Value::from(self.default.as_str()));
        }
        v.with("required", self.required)
    }

    /// from_json reads a request back; a member missing or of another type
    /// is empty, as Go's decoder leaves it.
    pub fn from_json(v: &Value) -> Question {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        Question {
            category: s("category"),
            question: s("question"),
            options: v
                .get("options")
                .and_then(Value::as_array)
                .unwrap_or(&[])
                .iter()
                .filter_map(|o| o.as_str().map(String::from))
                .collect(),
            default: s("default"),
            required: v.get("required").and_then(Value::as_bool).unwrap_or(false),
        }
    }

    /// validate_answer checks a human's answer and returns it in canonical
    /// form: trimmed and, with options, the option as written. A blank
    /// answer is refused for a required question and is the default for
    /// an optional one.
    pub fn validate_answer(&self, answer: &str) -> Result<String, String> {
        let a = answer.trim();
        if a.is_empty() {
            if self.required {
                return Err("an answer is required".into());
            }
            return Ok(self.default.clone());
        }
        if self.options.is_empty() {
            return Ok(a.to_string());
        }
        match match_option(&self.options, a) {
            Some(o) => Ok(o.to_string()),
            None => Err(format!("answer {} must be one of: {}", quote(a), self.options.join(", "))),
        }
    }

    /// skip returns the default, or refuses for a required question.
    pub fn skip(&self) -> Result<String, String> {
        if self.required {
            return Err("a required question cannot be skipped".into());
        }
        Ok(self.default.clone())
    }
}

/// match_option returns the option equal to s, ignoring case and
/// surrounding blanks.
pub fn match_option<'a>(options: &'a [String], s: &str) -> Option<&'a str> {
    let s = s.trim();
    options.iter().find(|o| equal_fold(o.trim(), s)).map(String::as_str)
}

/// equal_fold reports whether a and b are equal ignoring case, as Go's
/// strings.EqualFold does: character by character, under simple case
/// folding. Rust's standard library has no folding table; a character's
/// single-character lower- or upper-case mapping stands in for it, which
/// agrees with Go's on the characters of every cased script but a few
/// (see README.md).
pub fn equal_fold(a: &str, b: &str) -> bool {
    let (mut x, mut y) = (a.chars(), b.chars());
    loop {
        match (x.next(), y.next()) {
            (None, None) => return true,
            (Some(c), Some(d)) if fold_eq(c, d) => {}
            _ => return false,
        }
    }
}

fn fold_eq(c: char, d: char) -> bool {
    if c == d {
        return true;
    }
    if c.is_ascii() && d.is_ascii() {
        return c.eq_ignore_ascii_case(&d);
    }
    single(c.to_lowercase()).zip(single(d.to_lowercase())).map_or(false, |(l, m)| l == m)
        || single(c.to_uppercase()).zip(single(d.to_uppercase())).map_or(false, |(u, v)| u == v)
}

fn single(mut it: impl Iterator<Item = char>) -> Option<char> {
    let c = it.next()?;
    if it.next().is_some() {
        return None;
    }
    Some(c)
}

/// quote renders s as Go's `%q` does: in double quotes, with `"` and `\`
/// escaped, printable characters as they are, and the others as `\n`,
/// `\x7f`, `\u00a0` or `\U000e0001`. What Go counts as printable comes from
/// its Unicode tables; here every character is but the controls, the
/// spaces other than U+0020, the line and paragraph separators, the format
/// characters and the private use areas.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if printable(c) => out.push(c),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

fn printable(c: char) -> bool {
    let n = c as u32;
    if c == ' ' {
        return true;
    }
    !(c.is_control()
        || c.is_whitespace()
        || matches!(n, 0xad | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x180e | 0x200b..=0x200f | 0x202a..=0x202e | 0x2060..=0x206f)
        || matches!(n, 0xfeff | 0xfff9..=0xfffb | 0xfffe | 0xffff | 0xe000..=0xf8ff | 0xe0000..=0xe007f | 0xf0000..=0x10ffff))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(options: &[&str], default: &str, required: bool) -> Question {
        Question {
            category: "business".into(),
            question: "What pricing model?".into(),
            options: options.iter().map(|s| s.to_string()).collect(),
            default: default.into(),
            required,
        }
    }

    #[test]
    fn answers() {
        let opt = q(&["Subscription", "Freemium"], "Freemium", false);
        assert_eq!(opt.validate_answer("  freemium ").unwrap(), "Freemium");
        assert_eq!(opt.validate_answer(" ").unwrap(), "Freemium");
        assert_eq!(opt.validate_answer("Other").unwrap_err(), r#"answer "Other" must be one of: Subscription, Freemium"#);
        assert_eq!(opt.skip().unwrap(), "Freemium");
        let req = q(&[], "", true);
        assert_eq!(req.validate_answer("").unwrap_err(), "an answer is required");
        assert_eq!(req.validate_answer(" 40 ").unwrap(), "40");
        assert_eq!(req.skip().unwrap_err(), "a required question cannot be skipped");
    }

    #[test]
    fn json_is_the_native_order() {
        assert_eq!(
            q(&["A", "B"], "A", false).to_json().to_string(),
            r#"{"category":"business","question":"What pricing model?","options":["A","B"],"default":"A","required":false}"#
        );
        assert_eq!(q(&[], "", true).to_json().to_string(), r#"{"category":"business","question":"What pricing model?","required":true}"#);
        let v = q(&["A"], "A", true);
        assert_eq!(Question::from_json(&v.to_json()), v);
    }

    #[test]
    fn go_quoting() {
        assert_eq!(quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(quote("tab\there\n"), r#""tab\there\n""#);
        assert_eq!(quote("\u{7f}\u{a0}é€😀"), "\"\\x7f\\u00a0é€😀\"");
    }

    #[test]
    fn folding() {
        assert!(equal_fold("FREEMIUM", "freemium"));
        assert!(equal_fold("buſineſſ", "business")); // Go folds ſ to s
        assert!(equal_fold("\u{212a}", "k")); // the Kelvin sign
        assert!(equal_fold("ΣΑΣ", "σας"));
        assert!(!equal_fold("free", "freemium"));
    }
}
