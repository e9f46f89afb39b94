// The Ganglion guest ABI, version 2 (sdk/ABI.md), for AssemblyScript.
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

/**
 * The guest ABI version this library implements, which ganglion_abi_version
 * returns. A guest's manifest may say an older one: 1 unless it registers
 * pending kinds, which need 2.
 */
export const ABI_VERSION: i32 = 2;

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
  /** Version 2: why a pending hook runs, "resolve", "expire" or "resume". */
  PENDING_PHASE = 16,
  /** Version 2: the item a pending hook is about, JSON. */
  PENDING_ITEM = 17,
  /** Version 2: the human's action in a resolve, JSON; its value may be a secret. */
  ACTION = 18,
  /** Version 2: the guest's own item whose resume runs this toolCall; NOT_FOUND otherwise. */
  RESUMING = 19,
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
  /** Version 2: a kind of pending item (see registerPending). */
  PENDING = 6,
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

// readBytes is read for a value that need not be text: it returns the
// bytes, a buffer of their own, or null after a failure.
function readBytes(fn: Reader, ctx: i32): ArrayBuffer | null {
  let buf = scratch;
  if (buf === null) scratch = buf = new ArrayBuffer(SCRATCH_LEN);
  let n: i32;
  for (;;) {
    const cap = buf.byteLength;
    n = fn(ctx, 0, changetype<usize>(buf), cap);
    if (n <= cap) break;
    buf = new ArrayBuffer(n);
  }
  if (n < 0) {
    check(n);
    return null;
  }
  return buf !== scratch && n == buf.byteLength ? buf : buf.slice(0, n);
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

  /**
   * readFile reads the whole file at path, relative to the agent's
   * workspace, as text (version 2), or returns null: NOT_FOUND when it is
   * missing, DENIED when no path of the manifest's files covers it or it
   * leaves them ("..", an absolute path, a symbolic link that leads out),
   * TOO_LARGE over the extension's max_payload. Invalid UTF-8 becomes
   * U+FFFD; readFileBytes reads the bytes as they are.
   */
  readFile(path: string): string | null {
    const b = this.readFileBytes(path);
    return b === null ? null : String.UTF8.decode(b);
  }

  /** readFileBytes is readFile, its bytes as they are. */
  readFileBytes(path: string): ArrayBuffer | null {
    hostArg = utf8(path);
    const b = readBytes(readFileImport, this.ctx);
    hostArg = null;
    return b;
  }

  /**
   * listFiles returns the entries of the directory at path, sorted by name
   * (version 2), or null. The path must be one of the manifest's files or
   * under one, as readFile's.
   */
  listFiles(path: string): FileEntry[] | null {
    hostArg = utf8(path);
    const s = read(readFileList, this.ctx, 0);
    hostArg = null;
    return s === null ? null : FileEntry.parseList(s);
  }

  /**
   * writeFile replaces the file at path with data, UTF-8 (version 2):
   * readers see the old content or the new, never a mix. It creates the
   * file and its missing directories. The path must be one of the
   * manifest's files.write or under one. It returns 0 or a negative Code.
   */
  writeFile(path: string, data: string): i32 {
    return this.writeFileBytes(path, utf8(data));
  }

  /** appendFile adds data, UTF-8, at the end of the file at path, creating it as writeFile does. */
  appendFile(path: string, data: string): i32 {
    return this.writeFileBytes(path, utf8(data), true);
  }

  /** writeFileBytes is writeFile (or appendFile, with append) of bytes. */
  writeFileBytes(path: string, data: ArrayBuffer, append: bool = false): i32 {
    const p = utf8(path);
    return check(host.file_write(this.ctx, changetype<usize>(p), p.byteLength, changetype<usize>(data), data.byteLength,
      append ? FILE_APPEND : FILE_REPLACE));
  }

  /**
   * http sends req to an origin the manifest's http lists and the agent's
   * config grants (version 2), and returns the response, after the
   * redirects the host followed within the grant, or null: DENIED for an
   * origin or method not granted, TOO_LARGE for a response body over the
   * extension's max_payload, FAILED for a failed request or a redirect out
   * of the grant. A hook call sends at most 16 requests, and their time
   * counts against its deadline.
   */
  http(req: HttpRequest): HttpResponse | null {
    hostArg = utf8(req.toString());
    const out = read(readHttp, this.ctx, 0);
    hostArg = null;
    return out === null ? null : HttpResponse.parse(out);
  }

  /**
   * pause opens a pending item (version 2) and returns its ID, or null. In
   * a step hook, the turn ends paused once the step is done, and resumes
   * when every item it opened is resolved. In a toolCall hook, before
   * next: the call does not run now; the result the hook sets is what the
   * model reads until the turn resumes (without one, "waiting for a human
   * (pending item ID)"), and then the kind's resume decides the call's
   * result. A call pauses once.
   */
  pause(it: PendingItem): string | null {
    pauseRequest = utf8(it.toString());
    const out = read(readPause, this.ctx, 0);
    pauseRequest = null;
    if (out === null) return null;
    const v = json.parse(out);
    const id: string | null = v === null ? null : v.getString("id");
    if (id === null) {
      code = Code.INVALID;
      return null;
    }
    return id;
  }

  /**
   * resuming returns, in a toolCall hook, the guest's own item whose resume
   * runs this call (Resume.run): a guard that paused the call lets it
   * through then. It returns null, with NOT_FOUND, when the call runs for
   * any other reason.
   */
  resuming(): Item | null {
    const s = read(readField, this.ctx, Field.RESUMING);
    return s === null ? null : Item.parse(s);
  }
}

// --- pending items (version 2) ----------------------------------------------

// pauseRequest is the request readPause sends; a retry sends the same
// bytes, so the host answers with the item it opened rather than another.
let pauseRequest: ArrayBuffer | null = null;

function readPause(ctx: i32, _: i32, ptr: usize, cap: i32): i32 {
  const req = pauseRequest!;
  return host.pause(ctx, changetype<usize>(req), req.byteLength, ptr, cap);
}

/**
 * ResolveFn decides what a human's action means for an item: the Outcome,
 * or null to refuse the action (return refuse(msg)): the human is told
 * msg, and the item stays open.
 */
export type ResolveFn = (p: PendingCall, act: Action) => Outcome | null;

/** ExpireFn decides an item nobody acted on in time; null leaves the host's outcome, status timeout. */
export type ExpireFn = (p: PendingCall) => Outcome | null;

/**
 * ResumeFn decides the result of a call an item paused, when its turn
 * resumes: it runs the call (Resume.run, Resume.runWith) or gives it a
 * result (Resume.setResult). It returns 0 for success or 1 for failure,
 * as a Handler does.
 */
export type ResumeFn = (r: Resume) => i32;

/**
 * PendingKind is a kind of pending item (version 2) and what its
 * resolutions mean. The manifest lists its name under "pending" (and says
 * "abi": 2), and the agent's config grants it under the extension's
 * pending:. Register it in ganglion_init with registerPending:
 *
 *   registerPending(new PendingKind("ask", resolveAsk).resume(resumeAsk));
 */
export class PendingKind {
  /** @internal */
  expireFn: ExpireFn | null = null;
  /** @internal */
  resumeFn: ResumeFn | null = null;

  constructor(
    /** name is the kind: 1 to 64 lower-case letters, digits, _ or -. */
    public name: string,
    /** @internal */
    public resolveFn: ResolveFn,
  ) {}

  /** expire sets what decides an item nobody acted on in time, and returns the kind. */
  expire(fn: ExpireFn): PendingKind {
    this.expireFn = fn;
    return this;
  }

  /**
   * resume sets what decides the result of a call an item of this kind
   * paused, and returns the kind. With it, a human may also edit the
   * paused call's arguments (the action "edit", checked against the tool's
   * schema before the resolve function sees it).
   */
  resume(fn: ResumeFn): PendingKind {
    this.resumeFn = fn;
    return this;
  }
}

// The registered kinds and their IDs; null until the first registerPending,
// so that a guest without pending kinds allocates nothing for them.
let pendingIDs: i32[] | null = null;
let pendingKinds: PendingKind[] | null = null;

/** registerPending registers a kind of pending item (register kind 6); it returns its ID or a negative Code. */
export function registerPending(k: PendingKind): i32 {
  const spec = json.object().set("name", k.name);
  if (k.resumeFn !== null) spec.set("resume", true);
  const b = utf8(spec.toString());
  const id = check(host.register(Kind.PENDING, changetype<usize>(b), b.byteLength));
  if (id >= 0) {
    if (pendingIDs === null) pendingIDs = [];
    if (pendingKinds === null) pendingKinds = [];
    pendingIDs!.push(id);
    pendingKinds!.push(k);
  }
  return id;
}

/** PendingItem is an item to open with Hook.pause. */
export class PendingItem {
  /** required: the turn cannot go on without an answer. */
  required: bool = true;
  /** timeoutMs, if positive, expires the item that many milliseconds from now. */
  timeoutMs: i64 = 0;

  constructor(
    /** kind is a kind the guest registered. */
    public kind: string,
    /** request is what the human is asked: a JSON object. */
    public request: json.Value,
  ) {}

  /** toString returns the pause request, JSON. */
  toString(): string {
    return json.object().set("kind", this.kind).set("request", this.request)
      .set("required", this.required).set("timeout_ms", this.timeoutMs).toString();
  }
}

/** Item is a pending item as the runtime stores it. */
export class Item {
  id: string = "";
  kind: string = "";
  extension: string = "";
  agent: string = "";
  instance: string = "";
  turnId: string = "";
  /** step is the step that opened it. */
  step: i64 = 0;
  /** callId is the call it paused; "" for an item a step opened. */
  callId: string = "";
  /** request is what the human is asked. */
  request: json.Value = json.nullValue();
  required: bool = false;
  /** status is "pending" while open, then the outcome's. */
  status: string = "";
  open: bool = false;
  /** answer, reason and message are the outcome's, once resolved: resume reads answer. */
  answer: string = "";
  reason: string = "";
  message: string = "";
  createdAt: string = "";
  expiresAt: string = "";

  /** parse reads an item from the host's JSON, or returns null (INVALID) when it is malformed. */
  static parse(s: string): Item | null {
    const v = json.parse(s);
    if (v === null) {
      code = Code.INVALID;
      return null;
    }
    const it = new Item();
    it.id = str(v, "id");
    it.kind = str(v, "kind");
    it.extension = str(v, "extension");
    it.agent = str(v, "agent");
    it.instance = str(v, "instance");
    it.turnId = str(v, "turn_id");
    it.step = v.getInt("step");
    it.callId = str(v, "call_id");
    const r = v.get("request");
    if (r !== null) it.request = r;
    it.required = v.getBool("required");
    it.status = str(v, "status");
    it.open = v.getBool("open");
    it.answer = str(v, "answer");
    it.reason = str(v, "reason");
    it.message = str(v, "message");
    it.createdAt = str(v, "created_at");
    it.expiresAt = str(v, "expires_at");
    return it;
  }
}

// str returns v's string at key, or "".
function str(v: json.Value, key: string): string {
  const s = v.getString(key);
  return s === null ? "" : s;
}

/**
 * Action is what a human did with an item: kind is "answer", "skip",
 * "provide", "reject" or "edit" (value holds the edited arguments, JSON).
 * The value may be a secret: never log or publish it.
 */
export class Action {
  constructor(
    public kind: string,
    public value: string,
    public reason: string,
  ) {}
}

/** Outcome is what an action or a timeout makes of an item. */
export class Outcome {
  /** answer is kept with the item: resume reads it. */
  answer: string = "";
  /** reason is a rejection's. */
  reason: string = "";
  /** message is what the model reads of the outcome when the turn resumes; never a secret. */
  message: string = "";
  /** keepOpen leaves the item open to a later action. */
  keepOpen: bool = false;
  /** fails fails the resumed turn. */
  fails: bool = false;
  /**
   * secret keeps the action's value, encrypted, as the instance's secret
   * of this name (the manifest's secrets must list it).
   */
  secret: string = "";

  constructor(
    /** status is "answered", "provided", "rejected", "skipped", "timeout" or "failed". */
    public status: string,
  ) {}

  /** answered returns an "answered" outcome. */
  static answered(answer: string, message: string): Outcome {
    const o = new Outcome("answered");
    o.answer = answer;
    o.message = message;
    return o;
  }

  /** rejected returns a "rejected" outcome. */
  static rejected(answer: string, message: string): Outcome {
    const o = new Outcome("rejected");
    o.answer = answer;
    o.message = message;
    return o;
  }

  /** toString returns the outcome as the host reads it, JSON. */
  toString(): string {
    const v = json.object().set("status", this.status);
    if (this.answer.length > 0) v.set("answer", this.answer);
    if (this.reason.length > 0) v.set("reason", this.reason);
    if (this.message.length > 0) v.set("message", this.message);
    if (this.keepOpen) v.set("keep_open", true);
    if (this.fails) v.set("fails", true);
    if (this.secret.length > 0) v.set("secret", this.secret);
    return v.toString();
  }
}

/**
 * refuse sets msg as the hook's error and returns null: a ResolveFn that
 * returns it refuses the action, and the human is told msg.
 */
export function refuse(msg: string): Outcome | null {
  setError(msg);
  return null;
}

/**
 * PendingCall is the context of a kind's resolve and expire functions: the
 * item, and the extension's state, events, secrets and config for the
 * item's instance. The conversation, next and pause are not for it.
 */
export class PendingCall extends Hook {
  /** item reads the item the call is about, or returns null. */
  item(): Item | null {
    const s = read(readField, this.ctx, Field.PENDING_ITEM);
    return s === null ? null : Item.parse(s);
  }
}

/** Resume is the context of a kind's resume function: the call an item paused. */
export class Resume extends PendingCall {
  /**
   * run runs the paused call as the model made it, through the toolCall
   * middleware (the guest's own hook sees resuming()), and returns its
   * result, JSON {"content", "is_error"}, which becomes the call's unless
   * setResult follows. It returns null on failure: with FAILED, the call
   * failed, and a resume that returns 0 passes that failure on.
   */
  run(): string | null {
    if (this.next() < 0) return null;
    return this.field(Field.RESULT);
  }

  /**
   * runWith runs the paused call with args (JSON), a human's edit, in place
   * of the model's arguments; the history keeps both. See run.
   */
  runWith(args: string): string | null {
    if (this.setField(Field.TOOL_ARGS, args) < 0) return null;
    return this.run();
  }
}

/** dispatchPending runs the kind registered as id for ganglion_pending; exports.ts calls it. */
export function dispatchPending(ctx: i32, id: i32): i32 {
  let k: PendingKind | null = null;
  const ids = pendingIDs, kinds = pendingKinds;
  if (ids !== null && kinds !== null) {
    for (let i = 0, n = ids.length; i < n; i++) {
      if (unchecked(ids[i]) == id) k = unchecked(kinds[i]);
    }
  }
  if (k === null) return fail("no pending kind has ID " + id.toString());
  const phase = read(readField, ctx, Field.PENDING_PHASE);
  if (phase === null) return failed("field PENDING_PHASE");
  let out: Outcome | null = null;
  if (phase == "resolve") {
    // The action's value may be a secret: the bytes read are zeroed.
    const s = read(readField, ctx, Field.ACTION, true);
    if (s === null) return failed("field ACTION");
    const v = json.parse(s);
    if (v === null) return fail("field ACTION: " + json.parseError());
    out = k.resolveFn(new PendingCall(ctx, id), new Action(str(v, "kind"), str(v, "value"), str(v, "reason")));
    if (out === null) return 1;
  } else if (phase == "expire") {
    const fn = k.expireFn;
    if (fn === null) return 0; // the host's outcome: status timeout
    out = fn(new PendingCall(ctx, id));
    if (out === null) return 0;
  } else if (phase == "resume") {
    const fn = k.resumeFn;
    if (fn === null) return fail("pending kind " + json.quote(k.name) + " has no resume");
    return fn(new Resume(ctx, id));
  } else {
    return fail("pending kind " + json.quote(k.name) + ": unknown phase " + json.quote(phase));
  }
  const b = utf8(out.toString());
  if (check(host.set_field(ctx, Field.RESULT, changetype<usize>(b), b.byteLength)) < 0) return failed("set the outcome");
  return 0;
}

// --- files and HTTP (version 2) ---------------------------------------------

// hostArg is the path or the request that the readers below send; a retry
// of http_request sends the same bytes, so the host answers with the
// response it kept rather than sending the request again.
let hostArg: ArrayBuffer | null = null;

function readFileImport(ctx: i32, _: i32, ptr: usize, cap: i32): i32 {
  const p = hostArg!;
  return host.file_read(ctx, changetype<usize>(p), p.byteLength, ptr, cap);
}

function readFileList(ctx: i32, _: i32, ptr: usize, cap: i32): i32 {
  const p = hostArg!;
  return host.file_list(ctx, changetype<usize>(p), p.byteLength, ptr, cap);
}

function readHttp(ctx: i32, _: i32, ptr: usize, cap: i32): i32 {
  const req = hostArg!;
  return host.http_request(ctx, changetype<usize>(req), req.byteLength, ptr, cap);
}

// file_write's modes.
const FILE_REPLACE: i32 = 0;
const FILE_APPEND: i32 = 1;

/**
 * FileEntry is one entry of a directory Hook.listFiles lists. The manifest
 * names the paths a guest reads and writes under "files" ({"read": [...],
 * "write": [...]}, relative to the workspace) and says "abi": 2; the agent's
 * config grants them under the extension's files:.
 */
export class FileEntry {
  /** name is the entry's name in the directory. */
  name: string = "";
  /** dir: it is a directory (or a symbolic link to one in the grant). */
  dir: bool = false;
  /** size is a file's size in bytes; 0 for a directory. */
  size: i64 = 0;

  /** parseList reads the host's list of entries, or returns null (INVALID) when it is malformed. */
  static parseList(s: string): FileEntry[] | null {
    const v = json.parse(s);
    if (v === null || !(v.kind == json.Kind.ARRAY || v.isNull())) {
      code = Code.INVALID;
      return null;
    }
    const out: FileEntry[] = [];
    for (let i = 0, n = v.length; i < n; i++) {
      const e = v.at(i)!;
      const f = new FileEntry();
      f.name = str(e, "name");
      f.dir = e.getBool("dir");
      f.size = e.getInt("size");
      out.push(f);
    }
    return out;
  }
}

/**
 * HttpRequest is a request to send with Hook.http, to an origin the
 * manifest lists under "http" (["https://api.example.com"], with "abi": 2)
 * and the agent's config grants under the extension's http:.
 *
 *   const req = new HttpRequest("https://moderation.example.com/v1/check");
 *   req.method = "POST";
 *   req.body = '{"text":"hi"}';
 *   req.header("Content-Type", "application/json").secretHeader("Authorization", "MOD_KEY", "Bearer ");
 */
export class HttpRequest {
  /** method is the request's method; "" is GET. */
  method: string = "";
  /** body is the body as text; null for none. */
  body: string | null = null;
  /** bodyBase64 is a body that is not UTF-8, in base64 (standard, padded); never with body. */
  bodyBase64: string | null = null;
  /** timeoutMs, if positive, bounds the request below what is left of the hook's deadline. */
  timeoutMs: i64 = 0;
  /** headers are the request's headers, a JSON object of strings; see header. */
  headers: json.Value = json.object();
  /** secretHeaders are the headers set to a secret's value; see secretHeader. */
  secretHeaders: json.Value = json.object();

  constructor(
    /** url is absolute, http or https. */
    public url: string,
  ) {}

  /** header sets a header to value and returns the request, to chain. */
  header(name: string, value: string): HttpRequest {
    this.headers.set(name, value);
    return this;
  }

  /**
   * secretHeader sets a header to prefix ("Bearer ") and the value of a
   * secret the manifest lists, which the host places: the guest never reads
   * it, and a response that repeats it reads "[secret]". It returns the
   * request, to chain.
   */
  secretHeader(name: string, secret: string, prefix: string = ""): HttpRequest {
    const v = json.object().set("secret", secret);
    if (prefix.length > 0) v.set("prefix", prefix);
    this.secretHeaders.set(name, v);
    return this;
  }

  /** toString returns the request as http_request reads it, JSON; empty fields are left out. */
  toString(): string {
    const v = json.object();
    if (this.method.length > 0) v.set("method", this.method);
    v.set("url", this.url);
    if (this.headers.length > 0) v.set("headers", this.headers);
    if (this.secretHeaders.length > 0) v.set("secret_headers", this.secretHeaders);
    const body = this.body, b64 = this.bodyBase64;
    if (body !== null) v.set("body", body);
    if (b64 !== null) v.set("body_base64", b64);
    if (this.timeoutMs != 0) v.set("timeout_ms", this.timeoutMs);
    return v.toString();
  }
}

/** HttpResponse is the answer to an HttpRequest: the last response, after the redirects. */
export class HttpResponse {
  /** status is the status code. */
  status: i32 = 0;
  /** headers are the response's headers, a JSON object of strings, several values joined by ", ". */
  headers: json.Value = json.object();
  /** body is the body when it is UTF-8, else null. */
  body: string | null = null;
  /** bodyBase64 is the body in base64 when it is not UTF-8, else null. */
  bodyBase64: string | null = null;

  /** header returns the value of the header name, whatever its case, or null. */
  header(name: string): string | null {
    const h = this.headers, want = name.toLowerCase();
    for (let i = 0, n = h.length; i < n; i++) {
      if (h.keyAt(i).toLowerCase() == want) return h.at(i)!.asString();
    }
    return null;
  }

  /** parse reads a response from the host's JSON, or returns null (INVALID) when it is malformed. */
  static parse(s: string): HttpResponse | null {
    const v = json.parse(s);
    if (v === null || v.kind != json.Kind.OBJECT) {
      code = Code.INVALID;
      return null;
    }
    const r = new HttpResponse();
    r.status = <i32>v.getInt("status");
    const h = v.get("headers");
    if (h !== null && h.kind == json.Kind.OBJECT) r.headers = h;
    r.body = v.getString("body");
    r.bodyBase64 = v.getString("body_base64");
    return r;
  }
}
