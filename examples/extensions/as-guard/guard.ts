// as-guard: a guardrail in AssemblyScript. A turn middleware: an input
// starting with "!" is refused with a result of its own, without calling
// the model; any other input goes on. It behaves as the host's test module
// extensions/wasm/testdata/guard.wat does. Rebuild: see README.md.

import { Hook, Level, failed, log, manifest, registerTurn } from "../../../sdk/assemblyscript/assembly/index";

export { ganglion_abi_version, ganglion_turn } from "../../../sdk/assemblyscript/assembly/exports";

const MANIFEST = '{"name":"as-guard","version":"1.0.0","abi":1,"hooks":["turn"]}';
const REFUSAL = '{"finish_reason":"text_response","response":{"role":"assistant","content":"refused by as-guard"}}';

export function ganglion_init(): i32 {
  if (manifest(MANIFEST) < 0) return failed("manifest");
  if (registerTurn(guard) < 0) return failed("register turn");
  return 0;
}

function guard(h: Hook): i32 {
  log(Level.DEBUG, "as-guard saw a turn");
  const text = h.inputText();
  if (text === null) return failed("read the input");
  if (text.startsWith("!")) {
    if (h.setResult(REFUSAL) < 0) return failed("set the result");
    return 0;
  }
  if (h.next() < 0) return failed("next");
  return 0;
}
