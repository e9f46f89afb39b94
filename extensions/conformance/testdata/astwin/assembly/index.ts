// The AssemblyScript twin of the conformance suite's native extension
// (extensions/conformance/twin_test.go): the same behaviours, written with
// the AssemblyScript SDK in sdk/assemblyscript. Keep it in step with the
// native, Go and Rust twins; the package doc of extensions/conformance
// lists what they do.
//
// Build it with npm install && npm run build in its folder. The
// conformance test (internal/guesttest, AssemblyScriptSet) builds it
// offline as npm install would lay it out, the SDK linked under
// node_modules from package.json's file: dependency, with the compiler
// that cd sdk/assemblyscript && npm ci installs.

import {
  Action, Code, Field, Hook, Outcome, PendingCall, PendingItem, PendingKind, Resume,
  config, fail, failed, lastCode, lastError, manifest, refuse,
  registerPending, registerStep, registerTool, registerToolCall, registerTurn, subscribe,
} from "@ganglion/assemblyscript/assembly";
import * as json from "@ganglion/assemblyscript/assembly/json";
export * from "@ganglion/assemblyscript/assembly/exports";

// The config: section. tag names this configured instance in answers,
// events and errors; trace publishes twin.order as each hook enters and
// leaves and wraps the turn's response in the tag; hide lists the tools a
// step hides when the input starts with "hide"; echo registers twin_echo.
let tag = "";
let trace = false;
let hide: string[] = [];
let echo = false;

export function ganglion_init(): i32 {
  const bad = readConfig();
  if (bad !== null) return fail(bad);
  const tools: string[] = [];
  if (echo) tools.push("twin_echo");
  const m = json.object().set("name", "twin").set("version", "1.0.0").set("abi", 2)
    .set("hooks", ["turn", "step", "tool_call"]).set("tools", tools)
    .set("topics", json.object().set("publish", ["twin.*"]).set("subscribe", ["tool.finished"]))
    .set("state", true).set("pending", ["twin_ask", "twin_question"]);
  if (manifest(m.toString()) < 0) return failed("manifest");
  if (registerPending(new PendingKind("twin_ask", resolveAsk).resume(resumeAsk)) < 0) return failed("register twin_ask");
  if (registerPending(new PendingKind("twin_question", resolveQuestion)) < 0) return failed("register twin_question");
  if (registerTurn(turn) < 0) return failed("register the turn middleware");
  if (registerStep(step) < 0) return failed("register the step middleware");
  if (registerToolCall(toolCall) < 0) return failed("register the toolCall middleware");
  if (echo) {
    const params = '{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}';
    const spec = json.object().set("name", "twin_echo").set("description", "Echoes its text.")
      .set("parameters", json.parse(params)!).set("category", "read");
    if (registerTool(spec.toString(), echoTool) < 0) return failed("register twin_echo");
  }
  // The guest cannot tell which agent an event belongs to: it records every
  // tool.finished it is given (see the suite's "events of another agent"
  // case).
  if (subscribe("tool.finished", toolFinished) < 0) return failed("subscribe to tool.finished");
  return 0;
}

// readConfig reads the config: section into the globals; it returns why
// the section is refused, or null. A setting of the wrong type or one the
// twin does not know is a config error at its path ("config: $.colour:
// unknown setting"), which the host reports at its place in the config.
function readConfig(): string | null {
  const text = config();
  if (text === null) return "config: " + lastError();
  const c = json.parse(text);
  if (c === null) return "config: " + json.parseError();
  if (c.kind != json.Kind.NULL && c.kind != json.Kind.OBJECT) return "config: $: want a mapping";
  for (let i = 0; i < c.length; i++) {
    const key = c.keyAt(i);
    const v = c.at(i)!;
    const path = "config: " + keyPath(key) + ": ";
    if (key == "tag") {
      const s = v.asString();
      if (s === null) return path + "want a string";
      tag = s;
    } else if (key == "trace" || key == "echo") {
      if (v.kind != json.Kind.BOOL) return path + "want a boolean";
      if (key == "trace") trace = v.asBool();
      else echo = v.asBool();
    } else if (key == "hide") {
      if (v.kind != json.Kind.ARRAY) return path + "want a list";
      for (let j = 0; j < v.length; j++) {
        const s = v.at(j)!.asString();
        if (s === null) return "config: " + keyPath(key) + "[" + j.toString() + "]: want a string";
        hide.push(s);
      }
    } else {
      return path + "unknown setting";
    }
  }
  if (tag == "") return "config: tag is required";
  return null;
}

// keyPath is key as a path into the section: $.tag, or $["odd key"].
function keyPath(key: string): string {
  let plain = key.length > 0 && !(key.charCodeAt(0) >= 0x30 && key.charCodeAt(0) <= 0x39);
  for (let i = 0; i < key.length && plain; i++) {
    const c = key.charCodeAt(i);
    plain = c == 0x5f || c >= 0x30 && c <= 0x39 || c >= 0x41 && c <= 0x5a || c >= 0x61 && c <= 0x7a;
  }
  return plain ? "$." + key : "$[" + json.quote(key) + "]";
}

// State is the twin's state per instance: {"turns": n, "tools": [...]}.
class State {
  turns: i64 = 0;
  tools: string[] = [];

  // load reads it, or returns null after a failed read; none is a new one.
  static load(h: Hook): State | null {
    const st = new State();
    const text = h.state();
    if (text === null) return lastCode() == Code.NOT_FOUND ? st : null;
    const v = json.parse(text);
    if (v === null) return null;
    st.turns = v.getInt("turns");
    const tools = v.get("tools");
    if (tools !== null) {
      for (let i = 0; i < tools.length; i++) {
        const t = tools.at(i)!.asString();
        if (t !== null) st.tools.push(t);
      }
    }
    return st;
  }

  save(h: Hook): i32 {
    const v = json.object().set("turns", this.turns);
    if (this.tools.length > 0) v.set("tools", this.tools);
    return h.setState(v.toString());
  }
}

// command splits the input into its first two words.
function command(input: string): string[] {
  const words: string[] = [];
  let start = -1;
  for (let i = 0; i <= input.length && words.length < 2; i++) {
    const space = i == input.length || isSpace(input.charCodeAt(i));
    if (space && start >= 0) {
      words.push(input.substring(start, i));
      start = -1;
    } else if (!space && start < 0) {
      start = i;
    }
  }
  while (words.length < 2) words.push("");
  return words;
}

function isSpace(c: i32): bool {
  return c == 0x20 || c == 0x09 || c == 0x0a || c == 0x0d || c == 0x0b || c == 0x0c;
}

// traced publishes twin.order when trace is on; it returns 0 or the
// failed import's code.
function traced(h: Hook, hook: string, at: string): i32 {
  if (!trace) return 0;
  return h.publish("twin.order", json.object().set("tag", tag).set("hook", hook).set("at", at).toString());
}

// passOn is what a middleware returns when next returned n < 0: 0 passes
// the rest's failure (FAILED) on unchanged; anything else (a second next)
// is the middleware's own failure.
function passOn(n: i32): i32 {
  return n == Code.FAILED ? 0 : failed("next");
}

// readJSON reads field f of h as JSON, or returns null.
function readJSON(h: Hook, f: Field): json.Value | null {
  const text = h.field(f);
  return text === null ? null : json.parse(text);
}

// stepIndex returns the step number of a step hook, or -1.
function stepIndex(h: Hook): i32 {
  const s = h.field(Field.STEP);
  return s === null ? -1 : I32.parseInt(s);
}

// --- the turn middleware ------------------------------------------------------

function turn(h: Hook): i32 {
  const input = h.inputText();
  if (input === null) return failed("read the input");
  const words = command(input);
  const word = words[0], arg = words[1];
  const st = State.load(h);
  if (st === null) return failed("read the state");
  st.turns++;
  if (st.save(h) < 0) return failed("save the state");
  if (traced(h, "turn", "enter") < 0) return failed("publish twin.order");
  if (word == "stop") {
    const r = json.object().set("finish_reason", "text_response")
      .set("response", json.object().set("content", tag + " answered: " + input));
    return h.setResult(r.toString()) < 0 ? failed("set the result") : 0;
  } else if (word == "fail" && arg == "turn") {
    return fail(tag + ": turn failed on purpose");
  } else if (word == "panic" && arg == "turn") {
    // AssemblyScript's throw aborts: ganglion_abort sets the message as
    // the hook's error, and traps.
    throw new Error(tag + ": turn panicked on purpose");
  } else if (word == "rewrite") {
    const in_ = readJSON(h, Field.INPUT);
    if (in_ === null) return failed("read the input");
    const text = in_.getString("text");
    in_.set("text", "rewritten: " + (text === null ? "" : text));
    if (h.setField(Field.INPUT, in_.toString()) < 0) return failed("set the input");
  } else if (word == "edit") {
    const note = json.object().set("role", "system").set("content", tag + ": note before the input");
    if (h.emit(json.object().set("type", "append").set("message", note).toString()) < 0) return failed("emit");
  }
  let n = h.next();
  if (n < 0) return passOn(n);
  if (word == "twice") {
    n = h.next();
    if (n < 0) return passOn(n);
  }
  if (word == "fail" && arg == "turn-after") return fail(tag + ": turn failed after next");
  if (traced(h, "turn", "leave") < 0) return failed("publish twin.order");
  if (trace) {
    const r = readJSON(h, Field.RESULT);
    if (r === null) return failed("read the result");
    const resp = r.get("response");
    if (resp === null) return fail("the result has no response");
    const content = resp.getString("content");
    resp.set("content", tag + "(" + (content === null ? "" : content) + ")");
    if (h.setResult(r.toString()) < 0) return failed("set the result");
  }
  const ev = json.object().set("tag", tag).set("turns", st.turns);
  return h.publish("twin.turn", ev.toString()) < 0 ? failed("publish twin.turn") : 0;
}

// --- the step middleware ------------------------------------------------------

function step(h: Hook): i32 {
  const input = h.inputText();
  if (input === null) return failed("read the input");
  const words = command(input);
  const word = words[0], arg = words[1];
  if (traced(h, "step", "enter") < 0) return failed("publish twin.order");
  if (word == "hide") {
    const tools = readJSON(h, Field.TOOLS);
    if (tools === null) return failed("read the tools");
    const keep = json.array();
    for (let i = 0; i < tools.length; i++) {
      const name = tools.at(i)!.asString();
      if (name !== null && !hide.includes(name)) keep.push(name);
    }
    if (h.setField(Field.TOOLS, keep.toString()) < 0) return failed("set the tools");
  } else if (word == "edit" && stepIndex(h) == 1) {
    const lastText = h.message(-1);
    if (lastText === null) return failed("read the last message");
    const last = json.parse(lastText)!;
    const content = last.getString("content");
    last.set("content", "edited: " + (content === null ? "" : content));
    const replace = json.object().set("type", "replace").set("target_id", last.getString("id")).set("message", last);
    if (h.emit(replace.toString()) < 0) return failed("emit");
    const firstText = h.message(0);
    if (firstText === null) return failed("read the first message");
    const first = json.parse(firstText)!;
    if (h.emit(json.object().set("type", "remove").set("target_id", first.getString("id")).toString()) < 0) return failed("emit");
  } else if (word == "fail" && arg == "step") {
    return fail(tag + ": step failed on purpose");
  }
  const n = h.next();
  if (n < 0) return passOn(n);
  if (word == "ask" && stepIndex(h) == 1) {
    const req = json.object().set("tag", tag).set("question", "Which one?");
    if (h.pause(new PendingItem("twin_question", req)) === null) return failed("pause");
  }
  if (word == "more" && stepIndex(h) == 1 || word == "halt") {
    const r = readJSON(h, Field.RESULT);
    if (r === null) return failed("read the result");
    if (word == "more") r.set("continue", true);
    else r.set("stop", "max_steps");
    if (h.setResult(r.toString()) < 0) return failed("set the result");
  }
  return traced(h, "step", "leave") < 0 ? failed("publish twin.order") : 0;
}

// --- the toolCall middleware --------------------------------------------------

function toolCall(h: Hook): i32 {
  // Malformed arguments have no mode.
  const args = readJSON(h, Field.TOOL_ARGS);
  let mode: string | null = args === null ? null : args.getString("mode");
  if (mode === null) mode = "";
  if (mode == "ask" && h.resuming() === null) {
    if (lastCode() != Code.NOT_FOUND) return failed("field RESUMING");
    const req = json.object().set("tag", tag).set("tool", h.field(Field.TOOL_NAME));
    if (h.pause(new PendingItem("twin_ask", req)) === null) return failed("pause");
    const r = json.object().set("content", tag + " waits for a human");
    return h.setResult(r.toString()) < 0 ? failed("set the result") : 0;
  }
  if (traced(h, "tool_call", "enter") < 0) return failed("publish twin.order");
  if (mode == "fail") {
    return fail(tag + ": tool call failed on purpose");
  } else if (mode == "args") {
    if (h.setField(Field.TOOL_ARGS, json.object().set("text", "changed by " + tag).toString()) < 0) return failed("set the arguments");
  }
  const n = h.next();
  if (n < 0) return passOn(n);
  if (mode == "replace") {
    const r = readJSON(h, Field.RESULT);
    if (r === null) return failed("read the result");
    const content = r.getString("content");
    const out = json.object().set("content", tag + " replaced: " + (content === null ? "" : content));
    if (h.setResult(out.toString()) < 0) return failed("set the result");
  }
  return traced(h, "tool_call", "leave") < 0 ? failed("publish twin.order") : 0;
}

// --- the tool twin_echo and the subscription ----------------------------------

function echoTool(h: Hook): i32 {
  const args = readJSON(h, Field.TOOL_ARGS);
  if (args === null) return failed("read the arguments");
  const text = args.getString("text");
  if (text === null || text == "") return fail("twin_echo: the text is empty");
  let key = h.field(Field.IDEMPOTENCY_KEY);
  if (key === null) key = "";
  if (key.length != 35 || !key.startsWith("gk-")) return fail("twin_echo: no idempotency key: " + key);
  return h.setResult(json.object().set("content", tag + " echoes " + text).toString()) < 0 ? failed("set the result") : 0;
}

function toolFinished(h: Hook): i32 {
  const data = readJSON(h, Field.EVENT_DATA);
  if (data === null) return failed("read the event");
  const tool = data.getString("tool"), content = data.getString("content");
  const st = State.load(h);
  if (st === null) return failed("read the state");
  st.tools.push((tool === null ? "" : tool) + ": " + (content === null ? "" : content));
  return st.save(h) < 0 ? failed("save the state") : 0;
}

// --- the pending kinds --------------------------------------------------------

// twin_ask pauses a tool call until a human answers yes (the call runs) or
// no (it gets the twin's refusal).
function resolveAsk(p: PendingCall, act: Action): Outcome | null {
  if (act.kind == "answer" && act.value == "yes") return Outcome.answered("yes", tag + ": approved");
  if (act.kind == "answer" && act.value == "no") return Outcome.rejected("no", tag + ": denied");
  return refuse(tag + ": answer yes or no, not " + json.quote(act.value));
}

function resumeAsk(r: Resume): i32 {
  const it = r.item();
  if (it === null) return failed("read the item");
  if (it.answer != "yes") {
    const res = json.object().set("content", tag + ": the call was denied").set("is_error", true);
    return r.setResult(res.toString()) < 0 ? failed("set the result") : 0;
  }
  // The call's failure (FAILED) passes on as the call's.
  return r.run() === null && lastCode() != Code.FAILED ? failed("run the call") : 0;
}

// twin_question takes any answer but an empty one.
function resolveQuestion(p: PendingCall, act: Action): Outcome | null {
  if (act.kind != "answer") return refuse(tag + ": a question takes an answer");
  if (act.value.trim() == "") return refuse(tag + ": the answer is empty");
  return Outcome.answered(act.value, tag + " got: " + act.value);
}
