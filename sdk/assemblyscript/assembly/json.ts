// JSON for guests: a Value tree, an encoder (Value.toString) and a decoder
// (parse), enough for what crosses the ABI as JSON: manifests, configs,
// tool specs, arguments and results, events and state.
//
//   import * as json from "@ganglion/assemblyscript/assembly/json";
//
//   const m = json.object().set("name", "guard").set("abi", 1).set("hooks", ["turn"]);
//   manifest(m.toString());                // {"name":"guard","abi":1,"hooks":["turn"]}
//
//   const args = json.parse(argsText);     // null when malformed: json.parseError() says why
//   const who = args === null ? null : args.getString("name");
//
// Integers are kept as i64 and written without a fraction; other numbers
// are f64 (NaN and the infinities are written as null, which JSON lacks).
// An object keeps its keys in the order they were set; setting a key again
// replaces its value in place, and parse keeps the last of duplicate keys.

/** The kinds of JSON value. */
export enum Kind {
  NULL = 0,
  BOOL = 1,
  INT = 2,
  FLOAT = 3,
  STRING = 4,
  ARRAY = 5,
  OBJECT = 6,
}

/** Value is a JSON value. Build one with object(), array() or from(). */
export class Value {
  /** kind is what the value is; the accessors of other kinds return their fallback. */
  kind: Kind;
  private b: bool = false;
  private i: i64 = 0;
  private f: f64 = 0;
  private s: string = "";
  // An array's items or an object's values; an object's keys, in order.
  private items: Value[] | null = null;
  private keys: string[] | null = null;

  constructor(kind: Kind) {
    this.kind = kind;
  }

  /** isNull reports whether the value is null. */
  isNull(): bool {
    return this.kind == Kind.NULL;
  }

  /** asString returns a string's value, or null for any other kind. */
  asString(): string | null {
    return this.kind == Kind.STRING ? this.s : null;
  }

  /** asBool returns a boolean's value, or fallback for any other kind. */
  asBool(fallback: bool = false): bool {
    return this.kind == Kind.BOOL ? this.b : fallback;
  }

  /** asInt returns an integer's value (a float's when it is a whole i64), or fallback. */
  asInt(fallback: i64 = 0): i64 {
    if (this.kind == Kind.INT) return this.i;
    if (this.kind == Kind.FLOAT && this.f == Math.trunc(this.f) && Math.abs(this.f) < 9.2e18) return <i64>this.f;
    return fallback;
  }

  /** asFloat returns a number's value, or fallback for any other kind. */
  asFloat(fallback: f64 = 0): f64 {
    if (this.kind == Kind.FLOAT) return this.f;
    if (this.kind == Kind.INT) return <f64>this.i;
    return fallback;
  }

  /** length is the number of an array's items or an object's keys; 0 for any other kind. */
  get length(): i32 {
    const items = this.items;
    return items === null ? 0 : items.length;
  }

  /** at returns an array's item, or an object's value, at index; null when out of range. */
  at(index: i32): Value | null {
    const items = this.items;
    if (items === null || index < 0 || index >= items.length) return null;
    return unchecked(items[index]);
  }

  /** keyAt returns an object's key at index (see at); "" when out of range. */
  keyAt(index: i32): string {
    const keys = this.keys;
    if (keys === null || index < 0 || index >= keys.length) return "";
    return unchecked(keys[index]);
  }

  /** get returns an object's value for key, or null when it has none or is no object. */
  get(key: string): Value | null {
    const keys = this.keys;
    if (keys === null) return null;
    for (let i = 0, n = keys.length; i < n; i++) {
      if (unchecked(keys[i]) == key) return unchecked(this.items![i]);
    }
    return null;
  }

  /** getString is get(key) as a string, or null. */
  getString(key: string): string | null {
    const v = this.get(key);
    return v === null ? null : v.asString();
  }

  /** getBool is get(key) as a boolean, or fallback. */
  getBool(key: string, fallback: bool = false): bool {
    const v = this.get(key);
    return v === null ? fallback : v.asBool(fallback);
  }

  /** getInt is get(key) as an integer, or fallback. */
  getInt(key: string, fallback: i64 = 0): i64 {
    const v = this.get(key);
    return v === null ? fallback : v.asInt(fallback);
  }

  /**
   * set sets an object's key to v (a Value, string, bool, number, or an
   * array of these; see from) and returns the object, to chain. It does
   * nothing to a value of another kind.
   */
  set<T>(key: string, v: T): Value {
    this.put(key, from<T>(v));
    return this;
  }

  /** push appends v (see set) to an array and returns the array, to chain. */
  push<T>(v: T): Value {
    if (this.kind == Kind.ARRAY) this.items!.push(from<T>(v));
    return this;
  }

  // put sets an object's key, replacing its value in place.
  private put(key: string, v: Value): void {
    if (this.kind != Kind.OBJECT) return;
    const keys = this.keys!;
    for (let i = 0, n = keys.length; i < n; i++) {
      if (unchecked(keys[i]) == key) {
        this.items![i] = v;
        return;
      }
    }
    keys.push(key);
    this.items!.push(v);
  }

  /** toString returns the value as JSON text, without spaces. */
  toString(): string {
    const out: string[] = [];
    this.write(out);
    return out.join("");
  }

  private write(out: string[]): void {
    switch (this.kind) {
      case Kind.NULL:
        out.push("null");
        break;
      case Kind.BOOL:
        out.push(this.b ? "true" : "false");
        break;
      case Kind.INT:
        out.push(this.i.toString());
        break;
      case Kind.FLOAT:
        out.push(isFinite(this.f) ? this.f.toString() : "null");
        break;
      case Kind.STRING:
        out.push(quote(this.s));
        break;
      case Kind.ARRAY: {
        const items = this.items!;
        out.push("[");
        for (let i = 0, n = items.length; i < n; i++) {
          if (i > 0) out.push(",");
          unchecked(items[i]).write(out);
        }
        out.push("]");
        break;
      }
      default: {
        const keys = this.keys!;
        const items = this.items!;
        out.push("{");
        for (let i = 0, n = keys.length; i < n; i++) {
          if (i > 0) out.push(",");
          out.push(quote(unchecked(keys[i])));
          out.push(":");
          unchecked(items[i]).write(out);
        }
        out.push("}");
      }
    }
  }

  /** @internal */
  static make(kind: Kind): Value {
    const v = new Value(kind);
    if (kind == Kind.ARRAY || kind == Kind.OBJECT) v.items = [];
    if (kind == Kind.OBJECT) v.keys = [];
    return v;
  }

  /** @internal */
  static scalar(kind: Kind, b: bool, i: i64, f: f64, s: string): Value {
    const v = new Value(kind);
    v.b = b;
    v.i = i;
    v.f = f;
    v.s = s;
    return v;
  }
}

/** object returns an empty object. */
export function object(): Value {
  return Value.make(Kind.OBJECT);
}

/** array returns an empty array. */
export function array(): Value {
  return Value.make(Kind.ARRAY);
}

/** nullValue returns null, the JSON value. */
export function nullValue(): Value {
  return new Value(Kind.NULL);
}

/**
 * from returns v as a Value: a Value itself, a string, a bool, an integer
 * (as i64), a float, null (a null reference), or an array of any of these.
 * Another type is a compile error.
 */
export function from<T>(v: T): Value {
  if (isBoolean<T>()) {
    return Value.scalar(Kind.BOOL, <bool>v, 0, 0, "");
  } else if (isInteger<T>()) {
    return Value.scalar(Kind.INT, false, <i64>v, 0, "");
  } else if (isFloat<T>()) {
    return Value.scalar(Kind.FLOAT, false, 0, <f64>v, "");
  } else if (isString<T>()) {
    if (isNullable<T>()) {
      if (v === null) return nullValue();
    }
    return Value.scalar(Kind.STRING, false, 0, 0, changetype<string>(v));
  } else if (isArray<T>()) {
    if (isNullable<T>()) {
      if (v === null) return nullValue();
    }
    const a = array();
    for (let i = 0, n = v.length; i < n; i++) a.push<valueof<T>>(v[i]);
    return a;
  } else if (isReference<T>()) {
    if (v === null) return nullValue();
    if (v instanceof Value) return changetype<Value>(v);
    ERROR("json.from: want a Value, a string, a bool, a number or an array of these");
  } else {
    ERROR("json.from: want a Value, a string, a bool, a number or an array of these");
  }
  return nullValue();
}

/** quote returns s as a JSON string literal, quotes included. */
export function quote(s: string): string {
  let out = "\"";
  let from = 0;
  for (let i = 0, n = s.length; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c != 0x22 && c != 0x5c) continue;
    out += s.substring(from, i);
    from = i + 1;
    if (c == 0x22) out += "\\\"";
    else if (c == 0x5c) out += "\\\\";
    else if (c == 0x0a) out += "\\n";
    else if (c == 0x0d) out += "\\r";
    else if (c == 0x09) out += "\\t";
    else out += c < 0x10 ? "\\u000" + c.toString(16) : "\\u001" + (c - 0x10).toString(16);
  }
  return out + s.substring(from) + "\"";
}

// --- decoding ---------------------------------------------------------------

/** MAX_DEPTH bounds the nesting of arrays and objects that parse accepts. */
export const MAX_DEPTH: i32 = 128;

// lastParseError starts null rather than "": a module that imports this
// file without parsing then has no global to initialise at start.
let lastParseError: string | null = null;

/** parseError says why the last parse that returned null failed ("" after one that did not). */
export function parseError(): string {
  const e = lastParseError;
  return e === null ? "" : e;
}

/**
 * parse decodes JSON text (RFC 8259: one value, whitespace around it). It
 * returns null for malformed text; parseError then says what and at which
 * offset (in UTF-16 code units).
 */
export function parse(text: string): Value | null {
  const p = new Parser(text);
  p.space();
  let v = p.value(0);
  if (v !== null) {
    p.space();
    if (p.pos < text.length) v = p.fail("text after the value");
  }
  lastParseError = p.err;
  return v;
}

class Parser {
  pos: i32 = 0;
  err: string = "";

  constructor(public text: string) {}

  fail(what: string): Value | null {
    if (this.err == "") this.err = "json: " + what + " at offset " + this.pos.toString();
    return null;
  }

  peek(): i32 {
    return this.pos < this.text.length ? this.text.charCodeAt(this.pos) : -1;
  }

  space(): void {
    for (;;) {
      const c = this.peek();
      if (c != 0x20 && c != 0x0a && c != 0x0d && c != 0x09) return;
      this.pos++;
    }
  }

  word(w: string, v: Value): Value | null {
    if (this.text.substr(this.pos, w.length) != w) return this.fail("invalid literal");
    this.pos += w.length;
    return v;
  }

  value(depth: i32): Value | null {
    const c = this.peek();
    if (c == 0x7b || c == 0x5b) {
      if (depth >= MAX_DEPTH) return this.fail("nesting deeper than " + MAX_DEPTH.toString());
      return c == 0x7b ? this.object(depth + 1) : this.array(depth + 1);
    }
    if (c == 0x22) {
      const s = this.string();
      return s === null ? null : Value.scalar(Kind.STRING, false, 0, 0, s);
    }
    if (c == 0x74) return this.word("true", Value.scalar(Kind.BOOL, true, 0, 0, ""));
    if (c == 0x66) return this.word("false", Value.scalar(Kind.BOOL, false, 0, 0, ""));
    if (c == 0x6e) return this.word("null", nullValue());
    if (c == 0x2d || (c >= 0x30 && c <= 0x39)) return this.number();
    return this.fail(c < 0 ? "unexpected end" : "unexpected character");
  }

  object(depth: i32): Value | null {
    const o = object();
    this.pos++; // {
    this.space();
    if (this.peek() == 0x7d) {
      this.pos++;
      return o;
    }
    for (;;) {
      if (this.peek() != 0x22) return this.fail("want a key");
      const k = this.string();
      if (k === null) return null;
      this.space();
      if (this.peek() != 0x3a) return this.fail("want ':'");
      this.pos++;
      this.space();
      const v = this.value(depth);
      if (v === null) return null;
      o.set<Value>(k, v);
      this.space();
      const c = this.peek();
      this.pos++;
      if (c == 0x7d) return o;
      if (c != 0x2c) {
        this.pos--;
        return this.fail("want ',' or '}'");
      }
      this.space();
    }
    return null; // not reached
  }

  array(depth: i32): Value | null {
    const a = array();
    this.pos++; // [
    this.space();
    if (this.peek() == 0x5d) {
      this.pos++;
      return a;
    }
    for (;;) {
      const v = this.value(depth);
      if (v === null) return null;
      a.push<Value>(v);
      this.space();
      const c = this.peek();
      this.pos++;
      if (c == 0x5d) return a;
      if (c != 0x2c) {
        this.pos--;
        return this.fail("want ',' or ']'");
      }
      this.space();
    }
    return null; // not reached
  }

  string(): string | null {
    const t = this.text;
    this.pos++; // "
    let out = "";
    let from = this.pos;
    for (;;) {
      const c = this.peek();
      if (c < 0) {
        this.fail("unterminated string");
        return null;
      }
      if (c < 0x20) {
        this.fail("control character in a string");
        return null;
      }
      if (c == 0x22) {
        out += t.substring(from, this.pos);
        this.pos++;
        return out;
      }
      if (c != 0x5c) {
        this.pos++;
        continue;
      }
      out += t.substring(from, this.pos);
      this.pos++; // backslash
      const e = this.peek();
      this.pos++;
      if (e == 0x22) out += "\"";
      else if (e == 0x5c) out += "\\";
      else if (e == 0x2f) out += "/";
      else if (e == 0x62) out += "\b";
      else if (e == 0x66) out += "\f";
      else if (e == 0x6e) out += "\n";
      else if (e == 0x72) out += "\r";
      else if (e == 0x74) out += "\t";
      else if (e == 0x75) {
        let u = 0;
        for (let i = 0; i < 4; i++) {
          const h = this.peek();
          let d = -1;
          if (h >= 0x30 && h <= 0x39) d = h - 0x30;
          else if (h >= 0x61 && h <= 0x66) d = h - 0x61 + 10;
          else if (h >= 0x41 && h <= 0x46) d = h - 0x41 + 10;
          if (d < 0) {
            this.fail("invalid \\u escape");
            return null;
          }
          u = u * 16 + d;
          this.pos++;
        }
        // Strings are UTF-16: a surrogate pair written as two escapes
        // becomes the pair it stands for.
        out += String.fromCharCode(u);
      } else {
        this.pos--;
        this.fail("invalid escape");
        return null;
      }
      from = this.pos;
    }
    return null; // not reached
  }

  number(): Value | null {
    const t = this.text;
    const start = this.pos;
    if (this.peek() == 0x2d) this.pos++;
    const first = this.peek();
    if (first == 0x30) {
      this.pos++;
    } else if (first >= 0x31 && first <= 0x39) {
      while (isDigit(this.peek())) this.pos++;
    } else {
      return this.fail("invalid number");
    }
    let whole = true;
    if (this.peek() == 0x2e) {
      whole = false;
      this.pos++;
      if (!isDigit(this.peek())) return this.fail("invalid number");
      while (isDigit(this.peek())) this.pos++;
    }
    const e = this.peek();
    if (e == 0x65 || e == 0x45) {
      whole = false;
      this.pos++;
      const sign = this.peek();
      if (sign == 0x2b || sign == 0x2d) this.pos++;
      if (!isDigit(this.peek())) return this.fail("invalid number");
      while (isDigit(this.peek())) this.pos++;
    }
    const s = t.substring(start, this.pos);
    if (whole) {
      // An integer that fits in i64 stays exact; a longer one is a float.
      const neg = t.charCodeAt(start) == 0x2d;
      let n: i64 = 0;
      let fits = true;
      for (let i = neg ? start + 1 : start; i < this.pos; i++) {
        const d = <i64>(t.charCodeAt(i) - 0x30);
        if (n > (i64.MAX_VALUE - d) / 10) {
          fits = false;
          break;
        }
        n = n * 10 + d;
      }
      if (fits) return Value.scalar(Kind.INT, false, neg ? -n : n, 0, "");
    }
    return Value.scalar(Kind.FLOAT, false, 0, parseFloat(s), "");
  }
}

function isDigit(c: i32): bool {
  return c >= 0x30 && c <= 0x39;
}
