// Runs the checks of test/json.ts and test/pending.ts, compiled with
// bindings that turn their results into JavaScript strings: npm test
// compiles them to build/, the Go test json_test.go to a directory it
// names as the first argument.
import { pathToFileURL } from "node:url";
import { resolve } from "node:path";

const bindings = process.argv[2] ? pathToFileURL(resolve(process.argv[2])).href : "../build/test.js";
const { check, checkPending } = await import(bindings);
const failures = check() + checkPending();
if (failures !== "") {
  process.stderr.write(failures);
  process.exit(1);
}
console.log("ok: the JSON module and the pending items");
