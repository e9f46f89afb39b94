// The checks of the pending items' JSON, assembly/index.ts: what a guest
// sends the host (a pause request, an outcome) and reads from it (an item).
// checkPending returns "" or the failures, one a line; npm test (or
// json_test.go) compiles and runs it with test/json.ts.
import { Item, Outcome, PendingItem } from "../assembly/index";
import * as json from "../assembly/json";

let failures = "";

function expect(what: string, got: string, want: string): void {
  if (got != want) failures += what + ": got " + got + ", want " + want + "\n";
}

export function checkPending(): string {
  failures = "";
  // A pause request: required by default, no deadline.
  const it = new PendingItem("ask", json.object().set("tool", "probe"));
  expect("pause request", it.toString(), '{"kind":"ask","request":{"tool":"probe"},"required":true,"timeout_ms":0}');
  it.required = false;
  it.timeoutMs = 60000;
  expect("pause request with a deadline", it.toString(), '{"kind":"ask","request":{"tool":"probe"},"required":false,"timeout_ms":60000}');

  // Outcomes: empty fields left out, as the host reads them.
  expect("answered", Outcome.answered("yes", "approved").toString(), '{"status":"answered","answer":"yes","message":"approved"}');
  expect("rejected", Outcome.rejected("no", "denied").toString(), '{"status":"rejected","answer":"no","message":"denied"}');
  const o = new Outcome("provided");
  o.secret = "API_KEY";
  o.keepOpen = true;
  o.fails = true;
  o.reason = "r";
  expect("every field", o.toString(), '{"status":"provided","reason":"r","keep_open":true,"fails":true,"secret":"API_KEY"}');

  // An item as the host gives it.
  const got = Item.parse('{"id":"p-3","kind":"ask","extension":"gate","agent":"a","instance":"k","turn_id":"turn-1","step":2,' +
    '"call_id":"c1","request":{"tool":"probe"},"required":true,"status":"answered","open":false,"answer":"yes","reason":"",' +
    '"message":"approved","created_at":"2026-11-22T07:00:00Z","expires_at":"0001-01-01T00:00:00Z"}');
  if (got === null) {
    failures += "parse an item: null (" + json.parseError() + ")\n";
  } else {
    expect("item", [got.id, got.kind, got.extension, got.agent, got.instance, got.turnId, got.step.toString(), got.callId,
      got.request.toString(), got.required.toString(), got.status, got.open.toString(), got.answer, got.message,
      got.createdAt, got.expiresAt].join("|"),
      "p-3|ask|gate|a|k|turn-1|2|c1|{\"tool\":\"probe\"}|true|answered|false|yes|approved|2026-11-22T07:00:00Z|0001-01-01T00:00:00Z");
  }
  expect("a malformed item", Item.parse("{") === null ? "null" : "not null", "null");
  return failures;
}
