//! The USER_QUESTION block syntax, as the native parser
//! (extensions/protocol: scanner.go, fields.go, question.go) reads it when
//! USER_QUESTION is the only kind it knows, with the same problems in the
//! same words. It reads a whole reply at once; the native scanner reads it
//! as it streams, and finds the same.

use crate::question::{equal_fold, match_option, quote, Question, CATEGORIES};

/// The kind's name, in its tag lines.
pub const KIND: &str = "USER_QUESTION";

/// The longest line (without its "\n") that can be a tag line.
const MAX_TAG_LINE: usize = 256;

/// The most problems reported for one block, then a count of the others.
const MAX_PROBLEMS: usize = 20;

/// The fields of a USER_QUESTION block, in order.
const FIELDS: [(&str, Type, bool); 5] = [
    ("category", Type::Text, true),
    ("question", Type::Text, true),
    ("options", Type::List, false),
    ("default", Type::Text, false),
    ("required", Type::Bool, false),
];

/// The field names as the native messages list them.
const KNOWN: &str = "category, question, options, default, required";

#[derive(Clone, Copy, PartialEq)]
enum Type {
    Text,
    Bool,
    List,
}

/// Found is what a reply holds: a valid question, or one problem with a
/// block, its message as the model reads it.
#[derive(Debug, PartialEq)]
pub enum Found {
    /// A valid USER_QUESTION block.
    Question(Question),
    /// A problem: `line 3: [USER_QUESTION] is missing the required field "question"`.
    Problem(String),
}

/// parse returns the questions and problems of text, in the order they
/// appear.
pub fn parse(text: &str) -> Vec<Found> {
    let mut out = Vec::new();
    // The lines of text, each with its "\n" but the last.
    let mut lines: Vec<&str> = text.split_inclusive('\n').collect();
    if text.is_empty() {
        lines.clear();
    }
    let mut open: Option<usize> = None; // index of the open block's tag line
    for (i, line) in lines.iter().enumerate() {
        let tag = tag_of(line);
        match (open, tag) {
            (None, Some(true)) => out.push(Found::Problem(format!("line {}: [/{}] has no matching [{}] above it", i + 1, KIND, KIND))),
            (None, Some(false)) => open = Some(i),
            (Some(start), Some(true)) => {
                end_block(&lines[start + 1..i], start + 2, &mut out);
                open = None;
            }
            (Some(start), Some(false)) => {
                out.push(Found::Problem(never_closed(start + 1)));
                open = Some(i);
            }
            _ => {}
        }
    }
    if let Some(start) = open {
        out.push(Found::Problem(never_closed(start + 1)));
    }
    out
}

fn never_closed(line: usize) -> String {
    format!("[{}] opened at line {} is never closed", KIND, line)
}

fn is_blank(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | 0x0b | 0x0c)
}

/// tag_of says whether line is a tag line of the kind: Some(false) opens,
/// Some(true) closes. A tag line is "[NAME]" or "[/NAME]" alone, with
/// blanks around it, at most 256 bytes.
fn tag_of(line: &str) -> Option<bool> {
    let b = line.strip_suffix('\n').unwrap_or(line).as_bytes();
    if b.len() > MAX_TAG_LINE {
        return None;
    }
    let (mut i, mut j) = (0, b.len());
    while i < j && is_blank(b[i]) {
        i += 1;
    }
    while j > i && is_blank(b[j - 1]) {
        j -= 1;
    }
    if j - i < 3 || b[i] != b'[' || b[j - 1] != b']' {
        return None;
    }
    let inner = &b[i + 1..j - 1];
    match inner.strip_prefix(b"/") {
        Some(name) if name == KIND.as_bytes() => Some(true),
        None if inner == KIND.as_bytes() => Some(false),
        _ => None,
    }
}

/// Value is one field's value as parsed.
#[derive(Clone, Default)]
struct Value {
    set: bool,
    line: usize, // 0: not given
    text: String,
    b: bool,
    list: Vec<String>,
}

/// What a line that is not a field line means.
#[derive(Clone, Copy, PartialEq)]
enum Cont {
    None,  // before the first field
    Text,  // continues the current text field
    Items, // is a "- item" of the current list field
    Never, // after a bool or an inline list: must be blank
    Skip,  // after an error in the current field: ignored
}

/// end_block parses the body of a block (its lines between the tags; the
/// first is line `first`, the opening tag line `first - 1`) and adds the
/// question, or its problems, to out.
fn end_block(body: &[&str], first: usize, out: &mut Vec<Found>) {
    let open = first - 1;
    let (vals, mut probs) = parse_fields(body, first, open);
    if probs.is_empty() {
        match build(&vals, open) {
            Ok(q) => {
                out.push(Found::Question(q));
                return;
            }
            Err(p) => probs = p,
        }
    }
    if probs.len() > MAX_PROBLEMS {
        let more = (probs[MAX_PROBLEMS].0, format!("{} more problems in [{}] are not shown", probs.len() - MAX_PROBLEMS, KIND));
        probs.truncate(MAX_PROBLEMS);
        probs.push(more);
    }
    for (line, msg) in probs {
        out.push(Found::Problem(format!("line {}: {}", line, msg)));
    }
}

fn parse_fields(body: &[&str], first: usize, open: usize) -> (Vec<Value>, Vec<(usize, String)>) {
    let mut vals = vec![Value::default(); FIELDS.len()];
    let mut probs: Vec<(usize, String)> = Vec::new();
    let mut text = String::new();
    let mut cur: Option<usize> = None;
    let mut cont = Cont::None;

    fn finish(vals: &mut [Value], probs: &mut Vec<(usize, String)>, text: &mut String, cur: &mut Option<usize>, cont: Cont) {
        let i = match cur.take() {
            Some(i) => i,
            None => return,
        };
        let v = &mut vals[i];
        match cont {
            Cont::Text => {
                v.text = text.trim().to_string();
                text.clear();
                if v.text.is_empty() {
                    if FIELDS[i].2 {
                        probs.push((v.line, format!("the required field {} is empty", quote(FIELDS[i].0))));
                    }
                    v.set = false;
                }
            }
            Cont::Items if v.list.is_empty() => probs.push((v.line, format!("field {} is an empty list", quote(FIELDS[i].0)))),
            _ => {}
        }
    }

    for (n, raw) in body.iter().enumerate() {
        let ln = first + n;
        let line = raw.strip_suffix('\n').unwrap_or(raw).trim_end_matches(|c: char| c.is_ascii() && is_blank(c as u8));

        if let Some((name, value)) = field_line(line) {
            finish(&mut vals, &mut probs, &mut text, &mut cur, cont);
            let i = match FIELDS.iter().position(|f| f.0.eq_ignore_ascii_case(name)) {
                Some(i) => i,
                None => {
                    probs.push((ln, format!("unknown field {} in [{}] (known: {})", quote(name), KIND, KNOWN)));
                    cont = Cont::Skip;
                    continue;
                }
            };
            let (fname, ftype, _) = FIELDS[i];
            if vals[i].line != 0 {
                probs.push((ln, format!("duplicate field {} in [{}] (first given at line {})", quote(fname), KIND, vals[i].line)));
                cont = Cont::Skip;
                continue;
            }
            vals[i].set = true;
            vals[i].line = ln;
            cur = Some(i);
            let value = value.trim();
            match ftype {
                Type::Text => {
                    text.push_str(value);
                    cont = Cont::Text;
                }
                Type::Bool => match parse_bool(value) {
                    Some(b) => {
                        vals[i].b = b;
                        cont = Cont::Never;
                    }
                    None => {
                        probs.push((ln, format!("field {} must be true, false, yes or no, not {}", quote(fname), quote(value))));
                        cont = Cont::Skip;
                    }
                },
                Type::List if value.is_empty() => cont = Cont::Items,
                Type::List => match parse_inline_list(value) {
                    Ok(list) => {
                        vals[i].list = list;
                        cont = Cont::Never;
                    }
                    Err(msg) => {
                        probs.push((ln, format!("field {} {}", quote(fname), msg)));
                        cont = Cont::Skip;
                    }
                },
            }
            continue;
        }

        let blank = line.bytes().all(|c| matches!(c, b' ' | b'\t' | 0x0b | 0x0c));
        match cont {
            Cont::Text => {
                text.push('\n');
                text.push_str(line);
            }
            Cont::Items if blank => {}
            Cont::Items => {
                let fname = quote(FIELDS[cur.unwrap_or(0)].0);
                match dash_item(line) {
                    None => {
                        probs.push((ln, format!("expected \"- item\" under {}, or a field line", fname)));
                        cont = Cont::Skip;
                    }
                    Some(item) if item.is_empty() => {
                        probs.push((ln, format!("field {} has an empty item", fname)));
                        cont = Cont::Skip;
                    }
                    Some(item) => vals[cur.unwrap_or(0)].list.push(item.to_string()),
                }
            }
            Cont::None if !blank => {
                probs.push((ln, format!("expected a field line \"name: value\" in [{}] (known: {})", KIND, KNOWN)));
                cont = Cont::Skip;
            }
            Cont::Never if !blank => {
                probs.push((ln, format!("unexpected text after field {}: only text fields continue on the next line", quote(FIELDS[cur.unwrap_or(0)].0))));
                cont = Cont::Skip;
            }
            _ => {}
        }
    }
    finish(&mut vals, &mut probs, &mut text, &mut cur, cont);

    for (i, f) in FIELDS.iter().enumerate() {
        if f.2 && vals[i].line == 0 {
            probs.push((open, format!("[{}] is missing the required field {}", KIND, quote(f.0))));
        }
    }
    probs.sort_by_key(|p| p.0); // stable, as the native sort
    (vals, probs)
}

/// field_line splits a field line "name: value": an identifier at the
/// start of the line (after spaces or tabs), a colon at once, and after it
/// a blank or the end of the line.
fn field_line(line: &str) -> Option<(&str, &str)> {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
        i += 1;
    }
    let start = i;
    if i == b.len() || !(b[i].is_ascii_alphabetic() || b[i] == b'_') {
        return None;
    }
    i += 1;
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
        i += 1;
    }
    if i == b.len() || b[i] != b':' {
        return None;
    }
    if i + 1 < b.len() && b[i + 1] != b' ' && b[i + 1] != b'\t' {
        return None;
    }
    Some((&line[start..i], &line[i + 1..]))
}

/// dash_item returns the item of a "- item" line; a lone "-" is an empty
/// item.
fn dash_item(line: &str) -> Option<&str> {
    let s = line.trim_start_matches(|c| c == ' ' || c == '\t');
    let rest = s.strip_prefix('-')?;
    if !rest.is_empty() && !rest.starts_with(|c| c == ' ' || c == '\t') {
        return None; // "-5", "--flag": not an item
    }
    Some(rest.trim())
}

fn parse_bool(s: &str) -> Option<bool> {
    if equal_fold(s, "true") || equal_fold(s, "yes") {
        Some(true)
    } else if equal_fold(s, "false") || equal_fold(s, "no") {
        Some(false)
    } else {
        None
    }
}

/// parse_inline_list parses [a, b, "c, d"]; on failure, a message that
/// completes `field "options" ...`.
fn parse_inline_list(v: &str) -> Result<Vec<String>, String> {
    let b = v.as_bytes();
    if b.len() < 2 || b[0] != b'[' || b[b.len() - 1] != b']' {
        return Err("must be a list: [a, b] on one line, or \"- item\" lines under an empty \"name:\" line".into());
    }
    let inner = &v[1..v.len() - 1];
    if inner.trim().is_empty() {
        return Err("is an empty list".into());
    }
    let b = inner.as_bytes();
    let mut items = Vec::new();
    let mut i = 0;
    loop {
        while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
            i += 1;
        }
        let item;
        if i < b.len() && b[i] == b'"' {
            let mut s: Vec<u8> = Vec::new();
            let mut closed = false;
            i += 1;
            while i < b.len() {
                let c = b[i];
                if c == b'\\' && i + 1 < b.len() && (b[i + 1] == b'"' || b[i + 1] == b'\\') {
                    s.push(b[i + 1]);
                    i += 2;
                    continue;
                }
                if c == b'"' {
                    closed = true;
                    i += 1;
                    break;
                }
                s.push(c);
                i += 1;
            }
            if !closed {
                return Err("has an unterminated quoted item".into());
            }
            // The bytes are whole characters: quotes and backslashes are ASCII.
            item = String::from_utf8(s).unwrap_or_default();
            while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
                i += 1;
            }
            if i < b.len() && b[i] != b',' {
                return Err(format!("has text after the quoted item {}", quote(&item)));
            }
        } else {
            let j = inner[i..].find(',').map_or(b.len(), |j| i + j);
            item = inner[i..j].trim().to_string();
            i = j;
        }
        if item.trim().is_empty() {
            return Err("has an empty item".into());
        }
        items.push(item);
        if i >= b.len() {
            return Ok(items);
        }
        i += 1; // the comma
    }
}

/// build checks the rules beyond syntax and returns the question, or the
/// problems at their fields' lines (the opening line for a field not given).
fn build(vals: &[Value], open: usize) -> Result<Question, Vec<(usize, String)>> {
    let line = |i: usize| if vals[i].set { vals[i].line } else { open };
    let mut probs = Vec::new();
    let cat = vals[0].text.as_str();
    let mut q = Question {
        category: CATEGORIES.iter().rev().find(|c| equal_fold(cat, c)).map_or(String::new(), |c| c.to_string()),
        question: vals[1].text.clone(),
        options: vals[2].list.clone(),
        default: vals[3].text.clone(),
        required: vals[4].b,
    };
    if q.category.is_empty() {
        probs.push((line(0), format!("unknown category {} (want business, clarification, choice or confirmation)", quote(cat))));
    }
    for (i, o) in q.options.iter().enumerate() {
        if match_option(&q.options[..i], o).is_some() {
            probs.push((line(2), format!("option {} is listed twice", quote(o))));
        }
    }
    if !q.default.is_empty() && !q.options.is_empty() {
        match match_option(&q.options, &q.default) {
            Some(o) => q.default = o.to_string(),
            None => probs.push((line(3), format!("default {} must be one of the options: {}", quote(&q.default), q.options.join(", ")))),
        }
    }
    if probs.is_empty() {
        return Ok(q);
    }
    probs.sort_by_key(|p| p.0);
    Err(probs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(text: &str) -> Vec<String> {
        parse(text)
            .into_iter()
            .filter_map(|f| match f {
                Found::Problem(p) => Some(p),
                Found::Question(_) => None,
            })
            .collect()
    }

    #[test]
    fn a_question() {
        let text = "I need to know.\n  [USER_QUESTION]  \ncategory: Business\nquestion: What pricing\n  model?\noptions: [Subscription, \"Ads, with a free tier\"]\ndefault: subscription\nrequired: no\n[/USER_QUESTION]\nThanks";
        assert_eq!(
            parse(text),
            vec![Found::Question(Question {
                category: "business".into(),
                question: "What pricing\n  model?".into(),
                options: vec!["Subscription".into(), "Ads, with a free tier".into()],
                default: "Subscription".into(),
                required: false,
            })]
        );
    }

    #[test]
    fn list_lines() {
        let text = "[USER_QUESTION]\ncategory: choice\nquestion: Which?\noptions:\n  - PostgreSQL\n\n  - MySQL, or MariaDB\n[/USER_QUESTION]\n";
        match &parse(text)[0] {
            Found::Question(q) => assert_eq!(q.options, vec!["PostgreSQL", "MySQL, or MariaDB"]),
            other => panic!("{:?}", other),
        }
    }

    #[test]
    fn problems_as_native() {
        let tests: &[(&str, &[&str])] = &[
            ("[USER_QUESTION]\ncategory: business\n[/USER_QUESTION]\n", &[r#"line 1: [USER_QUESTION] is missing the required field "question""#]),
            ("x\n[USER_QUESTION]\ncategory: biz\nquestion: Q?\n[/USER_QUESTION]", &[r#"line 3: unknown category "biz" (want business, clarification, choice or confirmation)"#]),
            ("[USER_QUESTION]\ncategory: choice\nquestion: Q?\noptions: [a, A]\ndefault: c\n[/USER_QUESTION]\n", &[
                r#"line 4: option "A" is listed twice"#,
                r#"line 5: default "c" must be one of the options: a, A"#,
            ]),
            ("[USER_QUESTION]\ncategory: choice\nquestion: Q?\n", &["[USER_QUESTION] opened at line 1 is never closed"]),
            ("[/USER_QUESTION]\n", &["line 1: [/USER_QUESTION] has no matching [USER_QUESTION] above it"]),
            ("[USER_QUESTION]\n[USER_QUESTION]\ncategory: choice\nquestion: Q?\n[/USER_QUESTION]", &["[USER_QUESTION] opened at line 1 is never closed"]),
            ("[USER_QUESTION]\ncategory: choice\nquestoin: Q?\nrequired: maybe\ncategory: x\n[/USER_QUESTION]\n", &[
                r#"line 1: [USER_QUESTION] is missing the required field "question""#,
                r#"line 3: unknown field "questoin" in [USER_QUESTION] (known: category, question, options, default, required)"#,
                r#"line 4: field "required" must be true, false, yes or no, not "maybe""#,
                r#"line 5: duplicate field "category" in [USER_QUESTION] (first given at line 2)"#,
            ]),
            ("[USER_QUESTION]\nhello\ncategory:\nquestion: Q?\noptions:\nrequired: yes\ntrue\n[/USER_QUESTION]\n", &[
                r#"line 2: expected a field line "name: value" in [USER_QUESTION] (known: category, question, options, default, required)"#,
                r#"line 3: the required field "category" is empty"#,
                r#"line 5: field "options" is an empty list"#,
                r#"line 7: unexpected text after field "required": only text fields continue on the next line"#,
            ]),
            ("[USER_QUESTION]\ncategory: choice\nquestion: Q?\noptions:\n  x\n[/USER_QUESTION]\n", &[r#"line 5: expected "- item" under "options", or a field line"#]),
            ("[USER_QUESTION]\ncategory: choice\nquestion: Q?\noptions: [\"a\" b]\n[/USER_QUESTION]\n", &[r#"line 4: field "options" has text after the quoted item "a""#]),
            ("[USER_QUESTION]\ncategory: choice\nquestion: Q?\noptions: [a, , b]\n[/USER_QUESTION]\n", &[r#"line 4: field "options" has an empty item"#]),
            ("[USER_QUESTION]\ncategory: choice\nquestion: Q?\noptions: a, b\n[/USER_QUESTION]\n", &[
                r#"line 4: field "options" must be a list: [a, b] on one line, or "- item" lines under an empty "name:" line"#,
            ]),
        ];
        for (text, want) in tests {
            assert_eq!(problems(text), want.iter().map(|s| s.to_string()).collect::<Vec<_>>(), "{:?}", text);
        }
    }

    #[test]
    fn text_is_not_a_tag() {
        for text in ["see [USER_QUESTION] here", "[user_question]", "[NOTE]\n[/NOTE]", ""] {
            assert!(parse(text).is_empty(), "{:?}", text);
        }
    }
}
