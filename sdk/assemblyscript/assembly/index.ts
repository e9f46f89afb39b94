// The Ganglion guest ABI, version 1 (sdk/ABI.md), for AssemblyScript.
//
// A guest declares its manifest and registers its hooks in ganglion_init,
// which it exports itself; the hook exports (ganglion_turn, ...) come from
// exports.ts and call the functions registered here. A hook receives a
// [Hook] and returns 0 for success or 1 for failure (see fail and failed).
//
// Strings cross the boundary as UTF-8. Values the host returns are read
// with the ABI's grow-and-retry protocol: into a scratch buffer, and again
// into a buffer of the announced length when they do not fit.
//
// Functions that return a value return null on failure; functions that
// return an i32 return a negative Code on failure. Either way lastCode and
// lastError then say what failed.
//
// Build with the options of ../asconfig.json (see ../README.md): the
// incremental runtime, abort replaced by ganglion_abort, and the start
// function exported as _initialize.

import * as host from "./host";
import * as json from "./json";

/** The guest ABI version this library implements. */
export const ABI_VERSION: i32 = 1;

/** The results of the host imports: 0 or more is success. */
export enum Code {
  OK = 0,
  /** A bad argument: unknown field or kind, malformed JSON, invalid UTF-8. */
  INVALID = -1,
  /** No such message index, state, secret. */
  NOT_FOUND = -2,
  /** Not declared in the manifest, or not granted by the config. */
  DENIED = -3,
  /** The operation failed; lastError says why. */
  FAILED = -4,
  /** A (ptr, len) outside the guest's memory. */
  BOUNDS = -5,
  /** A value over the extension's max_payload. */
  TOO_LARGE = -6,
  /** A handle whose hook call has ended. */
  STALE = -7,
  /** An import used where it is not allowed. */
  PHASE = -8,
}

/** The fields of a hook's context that Hook.field reads and Hook.setField writes. */
export enum Field {
  AGENT = 1,
  INSTANCE = 2,
  TURN_ID = 3,
  INPUT = 4,
  INPUT_TEXT = 5,
  STEP = 6,
  TOOL_NAME = 7,
  TOOL_ARGS = 8,
  CALL_ID = 9,
  TOOLS = 10,
  RESULT = 11,
  EVENT_TOPIC = 12,
  EVENT_DATA = 13,
  /** The extension's config: section, JSON (null when it has none); see config(). */
  CONFIG = 14,
  /** A tool call's stable key (toolCall, tool). */
  IDEMPOTENCY_KEY = 15,
}

/** Log levels: the host's slog levels. */
export enum Level {
  DEBUG = -4,
  INFO = 0,
  WARN = 4,
  ERROR = 8,
}

/** The kinds of register. */
export enum Kind {
  TURN = 1,
  STEP = 2,
  TOOL_CALL = 3,
  TOOL = 4,
  EVENT = 5,
}

/** A hook: called with the context of one hook call, returns 0 or 1. */
export type Handler = (hook: Hook) => i32;

// --- errors -----------------------------------------------------------------

let code: i32 = 0;

/** lastCode returns the code of the last import that failed. */
export function lastCode(): i32 {
  return code;
}

/** lastError returns the host's message for the last import that failed. */
export function lastError(): string {
  const c = code;
  const msg = read(readLastError, 0, 0);
  code = c;
  return msg === null ? "" : msg;
}

/** codeName returns the name of an error code, as sdk/ABI.md spells it. */
export function codeName(c: i32): string {
  switch (c) {
    case Code.OK: return "OK";
    case Code.INVALID: return "INVALID";
    case Code.NOT_FOUND: return "NOT_FOUND";
    case Code.DENIED: return "DENIED";
    case Code.FAILED: return "FAILED";
    case Code.BOUNDS: return "BOUNDS";
    case Code.TOO_LARGE: return "TOO_LARGE";
    case Code.STALE: return "STALE";
    case Code.PHASE: return "PHASE";
  }
  return "code " + c.toString();
}

/** setError gives the host the message of the hook's failure. */
export function setError(msg: string): i32 {
  const b = utf8(msg);
  return check(host.set_error(changetype<usize>(b), b.byteLength));
}

/** fail sets msg as the hook's error and returns 1, a hook's failure. */
export function fail(msg: string): i32 {
  setError(msg);
  return 1;
}

/**
 * failed fails the hook after an import failed: its error is what, the
 * code's name and the host's message ("next: FAILED: the model failed").
 */
export function failed(what: string): i32 {
  return fail(what + ": " + codeName(code) + ": " + lastError());
}

// check records a failed import's code and returns its result.
function check(n: i32): i32 {
  if (n < 0) code = n;
  return n;
}

// --- strings ----------------------------------------------------------------

// utf8 returns s as UTF-8; a lone surrogate becomes U+FFFD, so the host
// never sees invalid UTF-8.
function utf8(s: string): ArrayBuffer {
  return String.UTF8.encode(s, false, String.UTF8.ErrorMode.REPLACE);
}

// scratch is the buffer values are read into; a longer value gets a buffer
// of its own, so a large value does not stay allocated.
const SCRATCH_LEN = 512;
let scratch: ArrayBuffer | null = null;

// A Reader calls an import that reads into the guest buffer (ptr, cap).
type Reader = (ctx: i32, arg: i32, ptr: usize, cap: i32) => i32;

function readField(ctx: i32, f: i32, ptr: usize, cap: i32): i32 {
  return host.field(ctx, f, ptr, cap);
}

function readMessage(ctx: i32, index: i32, ptr: usize, cap: i32): i32 {
  return host.message(ctx, index, ptr, cap);
}

function readState(ctx: i32, _: i32, ptr: usize, cap: i32): i32 {
  return host.state_get(ctx, ptr, cap);
}

// secretName is the name readSecret asks for.
let secretName: ArrayBuffer | null = null;

function readSecret(ctx: i32, _: i32, ptr: usize, cap: i32): i32 {
  const name = secretName!;
  return host.secret(ctx, changetype<usize>(name), name.byteLength, ptr, cap);
}

function readLastError(_: i32, __: i32, ptr: usize, cap: i32): i32 {
  return host.last_error(ptr, cap);
}

// read reads a value with fn into the scratch buffer, or, when the host
// announces a longer value, into a buffer of that length; it returns the
// value, or null after a failure. The length may change between two calls
// (state, for one): hence the loop. Each reader is a function of its own,
// so that a module imports only what it uses. wipe zeroes the bytes read
// once decoded (a secret's).
function read(fn: Reader, ctx: i32, arg: i32, wipe: bool = false): string | null {
  let buf = scratch;
  if (buf === null) scratch = buf = new ArrayBuffer(SCRATCH_LEN);
  let n: i32;
  for (;;) {
    const cap = buf.byteLength;
    n = fn(ctx, arg, changetype<usize>(buf), cap);
    if (n <= cap) break;
    buf = new ArrayBuffer(n);
  }
  if (n < 0) {
    check(n);
    return null;
  }
  const s = String.UTF8.decodeUnsafe(changetype<usize>(buf), n);
  if (wipe) memory.fill(changetype<usize>(buf), 0, n);
  return s;
}

/**
 * jsonString returns s as a JSON string literal, quotes included. To build
 * or read whole values, use the JSON module, ./json.
 */
export function jsonString(s: string): string {
  return json.quote(s);
}

// --- init -------------------------------------------------------------------

/**
 * config reads the extension's config: section from the agent's config,
 * as JSON ("null" when it has none), or returns null. It works in
 * ganglion_init, which may refuse a bad config by failing (see fail).
 */
export function config(): string | null {
  return read(readField, 0, Field.CONFIG);
}

/** manifest declares the guest's capability manifest (JSON), first thing in ganglion_init. */
export function manifest(json: string): i32 {
  const b = utf8(json);
  return check(host.manifest(changetype<usize>(b), b.byteLength));
}

/** NO_PRIORITY registers a middleware without a priority. */
export const NO_PRIORITY: i32 = i32.MIN_VALUE;

const kinds: i32[] = [];
const ids: i32[] = [];
const handlers: Handler[] = [];

function register(kind: i32, spec: string, fn: Handler): i32 {
  const b = utf8(spec);
  const id = check(host.register(kind, changetype<usize>(b), b.byteLength));
  if (id >= 0) {
    kinds.push(kind);
    ids.push(id);
    handlers.push(fn);
  }
  return id;
}

function middlewareSpec(priority: i32): string {
  return priority == NO_PRIORITY ? "" : "{\"priority\":" + priority.toString() + "}";
}

/** registerTurn registers a turn middleware; it returns its ID or a negative Code. */
export function registerTurn(fn: Handler, priority: i32 = NO_PRIORITY): i32 {
  return register(Kind.TURN, middlewareSpec(priority), fn);
}

/** registerStep registers a step middleware; it returns its ID or a negative Code. */
export function registerStep(fn: Handler, priority: i32 = NO_PRIORITY): i32 {
  return register(Kind.STEP, middlewareSpec(priority), fn);
}

/** registerToolCall registers a toolCall middleware; it returns its ID or a negative Code. */
export function registerToolCall(fn: Handler, priority: i32 = NO_PRIORITY): i32 {
  return register(Kind.TOOL_CALL, middlewareSpec(priority), fn);
}

/**
 * registerTool registers a tool the manifest lists. spec is its JSON
 * {"name", "description", "parameters", "category"}.
 */
export function registerTool(spec: string, fn: Handler): i32 {
  return register(Kind.TOOL, spec, fn);
}

/** subscribe calls fn for the events whose topic matches pattern, one of the manifest's topics.subscribe. */
export function subscribe(pattern: string, fn: Handler): i32 {
  return register(Kind.EVENT, json.object().set("pattern", pattern).toString(), fn);
}

/** dispatch runs the handler registered as id for a hook export of kind; exports.ts calls it. */
export function dispatch(kind: i32, ctx: i32, id: i32): i32 {
  for (let i = 0, n = ids.length; i < n; i++) {
    if (unchecked(ids[i]) == id && unchecked(kinds[i]) == kind) {
      const fn = unchecked(handlers[i]);
      return fn(new Hook(ctx, id));
    }
  }
  return fail("no hook of kind " + kind.toString() + " has ID " + id.toString());
}

// --- anywhere ---------------------------------------------------------------

/** log logs msg at level (see Level) in the host's log. */
export function log(level: i32, msg: string): i32 {
  const b = utf8(msg);
  return check(host.log(level, changetype<usize>(b), b.byteLength));
}

// aborting is set while abort runs, so that an abort in abort (out of
// memory) traps at once.
let aborting = false;

/**
 * ganglion_abort replaces AssemblyScript's abort, an import of env.abort
 * that the host does not provide: build with --use abort=ganglion_abort (as
 * asconfig.json does). It logs the message at error level, sets it as the
 * hook's error and traps; the host then throws the instance away.
 */
// @ts-ignore: decorator
@global
export function ganglion_abort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  if (!aborting) {
    aborting = true;
    let msg = "abort: " + (message === null ? "(no message)" : message);
    if (fileName !== null) msg += " at " + fileName + ":" + line.toString() + ":" + column.toString();
    log(Level.ERROR, msg);
    setError(msg);
  }
  unreachable();
}

// --- hooks ------------------------------------------------------------------

// INBOX is where the host keeps, for the hook whose code runs, its handle
// (bytes 0-7) and the generations of its INPUT_TEXT (8-15) and TOOL_NAME
// (16-23): a hook given the generation of a text read before has that same
// text (sdk/ABI.md, "inbox"). A read is a crossing into the host and a new
// string; inputText keeps the last text it read, with its generation.
const INBOX = memory.data(24, 8);
let inboxOn = false;
let inputGen: u64 = 0;
let inputKept: string | null = null;

/**
 * Hook is the context of one hook call. It is valid only while that call
 * runs; afterwards every import refuses it (STALE).
 */
export class Hook {
  constructor(
    /** ctx is the handle the host passed. */
    public ctx: i32,
    /** id is the ID register returned for the hook. */
    public id: i32,
  ) {}

  /** field reads a field of the context, or returns null. */
  field(f: Field): string | null {
    return read(readField, this.ctx, f);
  }

  /** setField writes a field of the context. */
  setField(f: Field, value: string): i32 {
    const b = utf8(value);
    return check(host.set_field(this.ctx, f, changetype<usize>(b), b.byteLength));
  }

  /**
   * inputText is field(Field.INPUT_TEXT), read from the host only when the
   * inbox says it is a text this instance has not read last (see INBOX).
   */
  inputText(): string | null {
    if (!inboxOn) {
      // Registered at the first read, for which the host writes it at once.
      // A refusal leaves it zero: every read then goes to the host.
      inboxOn = true;
      host.inbox(INBOX, 24);
    }
    const mine = load<u64>(INBOX) == <u64><u32>this.ctx;
    const gen = load<u64>(INBOX, 8);
    if (mine && gen != 0 && gen == inputGen) return inputKept;
    const text = this.field(Field.INPUT_TEXT);
    if (mine && gen != 0 && text !== null) {
      inputGen = gen;
      inputKept = text;
    }
    return text;
  }

  /** setResult is setField(Field.RESULT, json). */
  setResult(json: string): i32 {
    return this.setField(Field.RESULT, json);
  }

  /**
   * next runs the rest of the chain, once; its result is then
   * field(Field.RESULT). FAILED means the rest failed.
   */
  next(): i32 {
    return check(host.next(this.ctx));
  }

  /** messagesLen returns the conversation's length (turn and step hooks). */
  messagesLen(): i32 {
    return check(host.messages_len(this.ctx));
  }

  /** message reads a message as JSON; a negative index counts from the end. */
  message(index: i32): string | null {
    return read(readMessage, this.ctx, index);
  }

  /** emit appends, replaces or removes a message (a message event, JSON). */
  emit(event: string): i32 {
    const b = utf8(event);
    return check(host.emit(this.ctx, changetype<usize>(b), b.byteLength));
  }

  /** state reads the extension's JSON state for the instance; null with NOT_FOUND when there is none. */
  state(): string | null {
    return read(readState, this.ctx, 0);
  }

  /** setState writes the state; "" deletes it. */
  setState(json: string): i32 {
    const b = utf8(json);
    return check(host.state_set(this.ctx, changetype<usize>(b), b.byteLength));
  }

  /** publish publishes an event whose data is JSON ("" for none). */
  publish(topic: string, data: string): i32 {
    const t = utf8(topic);
    const d = utf8(data);
    return check(host.publish(this.ctx, changetype<usize>(t), t.byteLength, changetype<usize>(d), d.byteLength));
  }

  /** secret reads a secret provided to the instance. Do not log, publish or store it. */
  secret(name: string): string | null {
    secretName = utf8(name);
    const v = read(readSecret, this.ctx, 0, true);
    secretName = null;
    return v;
  }
}
