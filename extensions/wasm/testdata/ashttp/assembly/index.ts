// The AssemblyScript twin of testdata/gohttp and testdata/rusthttp: its
// turn hook reads the turn's input as a request, {"method", "url",
// "secret", "body"}, sends it with Hook.http (with the secret MOD_KEY in
// Authorization when "secret" is true) and answers the turn with "STATUS
// BODY"; a refused request fails the hook with "[CODE] MESSAGE".
// internal/guesttest (AssemblyScriptSet) builds it for http_test.go.

import { Hook, HttpRequest, codeName, fail, failed, lastCode, lastError, manifest, registerTurn } from "@ganglion/assemblyscript/assembly";
import * as json from "@ganglion/assemblyscript/assembly/json";
export { ganglion_abi_version, ganglion_turn } from "@ganglion/assemblyscript/assembly/exports";

export function ganglion_init(): i32 {
  const m = json.object().set("name", "ashttp").set("version", "1.0.0").set("abi", 2).set("hooks", ["turn"])
    .set("secrets", ["MOD_KEY"]).set("http", ["http://granted.example", "http://get.example:8080"]);
  if (manifest(m.toString()) < 0) return failed("manifest");
  if (registerTurn(turn) < 0) return failed("register turn");
  return 0;
}

function turn(h: Hook): i32 {
  const input = h.inputText();
  if (input === null) return failed("read the input");
  const v = json.parse(input);
  if (v === null) return fail("the input: " + json.parseError());
  const url = v.getString("url");
  const req = new HttpRequest(url === null ? "" : url).header("X-Guest", "ashttp");
  const method = v.getString("method");
  if (method !== null) req.method = method;
  const body = v.getString("body");
  if (body !== null && body.length > 0) req.body = body;
  if (v.getBool("secret")) req.secretHeader("Authorization", "MOD_KEY", "Bearer ");
  const res = h.http(req);
  if (res === null) return fail("[" + codeName(lastCode()) + "] " + lastError());
  const text = res.body;
  const out = json.object().set("finish_reason", "text_response")
    .set("response", json.object().set("role", "assistant").set("content", res.status.toString() + " " + (text === null ? "" : text)));
  return h.setResult(out.toString()) < 0 ? failed("set the result") : 0;
}
