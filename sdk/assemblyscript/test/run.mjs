// Runs the checks of test/json.ts, compiled with bindings that turn its
// result into a JavaScript string: npm test compiles it to build/, the Go
// test json_test.go to a directory it names as the first argument.
import { pathToFileURL } from "node:url";
import { resolve } from "node:path";

const bindings = process.argv[2] ? pathToFileURL(resolve(process.argv[2])).href : "../build/test.js";
const { check } = await import(bindings);
const failures = check();
if (failures !== "") {
  process.stderr.write(failures);
  process.exit(1);
}
console.log("ok: the JSON module");
