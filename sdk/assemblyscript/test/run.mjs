// Runs the checks of test/json.ts, test/pending.ts and test/caps.ts, compiled with
// bindings that turn their results into JavaScript strings: npm test
// compiles them to build/, the Go test json_test.go to a directory it
// names as the first argument.
import { pathToFileURL } from "node:url";
import { resolve } from "node:path";

const bindings = process.argv[2] ? pathToFileURL(resolve(process.argv[2])).href : "../build/test.js";
const { check, checkPending, checkCaps } = await import(bindings);
const failures = check() + checkPending() + checkCaps();
if (failures !== "") {
  process.stderr.write(failures);
  process.exit(1);
}
console.log("ok: the JSON module, the pending items, files and HTTP");
