// The AssemblyScript twin of testdata/gofiles and testdata/rustfiles: it
// reads, lists and writes workspace files through the SDK's Hook methods.
// Its turn hook answers the turn itself:
//
// - "owners": with the content of CODEOWNERS;
// - "docs": with the names in docs/, a "/" after a directory's;
// - "note TEXT": appends TEXT and a newline to out/notes.txt, and answers
//   with the file's new content;
// - "replace TEXT": replaces out/notes.txt with TEXT, and answers with it;
// - "steal": reads ../outside/secret.txt, and answers with the error.
//
// Any other input goes on to next. internal/guesttest (AssemblyScriptSet)
// builds it for files_test.go.

import { Hook, codeName, failed, lastCode, lastError, manifest, registerTurn } from "@ganglion/assemblyscript/assembly";
import * as json from "@ganglion/assemblyscript/assembly/json";
export { ganglion_abi_version, ganglion_turn } from "@ganglion/assemblyscript/assembly/exports";

export function ganglion_init(): i32 {
  const files = json.object().set("read", ["CODEOWNERS", "docs/"]).set("write", ["out/"]);
  const m = json.object().set("name", "asfiles").set("version", "1.0.0").set("abi", 2).set("hooks", ["turn"]).set("files", files);
  if (manifest(m.toString()) < 0) return failed("manifest");
  if (registerTurn(turn) < 0) return failed("register turn");
  return 0;
}

function turn(h: Hook): i32 {
  const input = h.inputText();
  if (input === null) return failed("read the input");
  let answer: string | null = null;
  if (input == "owners") {
    answer = h.readFile("CODEOWNERS");
    if (answer === null) return failed("read CODEOWNERS");
  } else if (input == "docs") {
    const list = h.listFiles("docs");
    if (list === null) return failed("list docs");
    const names: string[] = [];
    for (let i = 0; i < list.length; i++) names.push(list[i].dir ? list[i].name + "/" : list[i].name);
    answer = names.join(" ");
  } else if (input.startsWith("note ")) {
    if (h.appendFile("out/notes.txt", input.slice(5) + "\n") < 0) return failed("append to out/notes.txt");
    answer = h.readFile("out/notes.txt");
    if (answer === null) return failed("read out/notes.txt");
  } else if (input.startsWith("replace ")) {
    if (h.writeFile("out/notes.txt", input.slice(8)) < 0) return failed("write out/notes.txt");
    answer = h.readFile("out/notes.txt");
    if (answer === null) return failed("read out/notes.txt");
  } else if (input == "steal") {
    answer = h.readFile("../outside/secret.txt") === null ? "refused: " + codeName(lastCode()) + ": " + lastError() : "read it";
  } else {
    return h.next() < 0 ? failed("next") : 0;
  }
  const out = json.object().set("finish_reason", "text_response")
    .set("response", json.object().set("role", "assistant").set("content", answer!));
  return h.setResult(out.toString()) < 0 ? failed("set the result") : 0;
}
