// The checks of the JSON module, assembly/json.ts: check returns "" or the
// failures, one a line. npm test (or json_test.go) compiles and runs it.
import * as json from "../assembly/json";

let failures = "";

function expect(what: string, got: string, want: string): void {
  if (got != want) failures += what + ": got " + got + ", want " + want + "\n";
}

function roundTrip(text: string, want: string): void {
  const v = json.parse(text);
  expect("parse " + text, v === null ? "null (" + json.parseError() + ")" : v.toString(), want);
}

function refused(text: string, want: string): void {
  const v = json.parse(text);
  expect("parse " + text, v === null ? json.parseError() : "accepted " + v.toString(), want);
}

export function check(): string {
  failures = "";
  // Building.
  const m = json.object().set("name", "guard").set("abi", 1).set("hooks", ["turn", "tool"]).set("state", true);
  expect("object", m.toString(), '{"name":"guard","abi":1,"hooks":["turn","tool"],"state":true}');
  m.set("abi", 2).set("nested", json.object().set("x", 1.5)).set("none", <string | null>null);
  expect("set again", m.toString(), '{"name":"guard","abi":2,"hooks":["turn","tool"],"state":true,"nested":{"x":1.5},"none":null}');
  expect("array", json.array().push(1).push("a\"b\\c\n\u0001").push(false).push(json.nullValue()).toString(), '[1,"a\\"b\\\\c\\n\\u0001",false,null]');
  expect("i64", json.from<i64>(-9223372036854775807).toString(), "-9223372036854775807");
  expect("NaN", json.from(NaN).toString(), "null");
  expect("quote", json.quote("é\t"), '"é\\t"');

  // Parsing and writing back.
  roundTrip(' {"a" : [1, -2, 3.25, 1e3, true, false, null, "x"], "b": {}} ', '{"a":[1,-2,3.25,1000.0,true,false,null,"x"],"b":{}}');
  roundTrip('"\\u00e9\\ud83d\\ude00\\/\\b\\f"', '"é😀/\\u0008\\u000c"');
  roundTrip('{"k":1,"k":2}', '{"k":2}');
  roundTrip("[]", "[]");
  roundTrip("9223372036854775807", "9223372036854775807");
  roundTrip("92233720368547758070", "92233720368547760000.0");

  // Reading.
  const v = json.parse('{"name":"world","n":3,"f":2.0,"ok":true,"list":["a","b"]}')!;
  expect("getString", v.getString("name")!, "world");
  expect("getString of a number", v.getString("n") === null ? "null" : "not null", "null");
  expect("getInt", v.getInt("n").toString(), "3");
  expect("getInt of a whole float", v.getInt("f").toString(), "2");
  expect("getInt fallback", v.getInt("name", -1).toString(), "-1");
  expect("getBool", v.getBool("ok") ? "true" : "false", "true");
  expect("missing", v.get("nope") === null ? "null" : "not null", "null");
  const list = v.get("list")!;
  expect("length", list.length.toString(), "2");
  expect("at", list.at(1)!.asString()!, "b");
  expect("at out of range", list.at(2) === null ? "null" : "not null", "null");
  expect("keyAt", v.keyAt(4), "list");
  expect("kind", v.kind.toString(), json.Kind.OBJECT.toString());

  // Refusing.
  refused("", "json: unexpected end at offset 0");
  refused("{", "json: want a key at offset 1");
  refused('{"a" 1}', "json: want ':' at offset 5");
  refused("[1 2]", "json: want ',' or ']' at offset 3");
  refused('{"a":1,}', "json: want a key at offset 7");
  refused("tru", "json: invalid literal at offset 0");
  refused("01", "json: text after the value at offset 1");
  refused("-", "json: invalid number at offset 1");
  refused("1.", "json: invalid number at offset 2");
  refused('"a', "json: unterminated string at offset 2");
  refused('"\\x"', "json: invalid escape at offset 2");
  refused('"\\u12g4"', "json: invalid \\u escape at offset 5");
  refused('"\n"', "json: control character in a string at offset 1");
  refused("[".repeat(129), "json: nesting deeper than 128 at offset 128");
  roundTrip("[".repeat(128) + "]".repeat(128), "[".repeat(128) + "]".repeat(128));
  expect("parseError after success", json.parseError(), "");
  return failures;
}
