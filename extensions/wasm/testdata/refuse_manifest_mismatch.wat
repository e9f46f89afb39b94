;; refuse_manifest_mismatch.wat: a module whose ganglion_abi_version returns 1
;; and whose manifest says "abi": 2, which the host must refuse to load: a
;; manifest may not ask for what a newer version than the module's adds.
;; Rebuild: wat2wasm refuse_manifest_mismatch.wat -o refuse_manifest_mismatch.wasm
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 1024) "{\"abi\":2}")
  (func (export "ganglion_abi_version") (result i32) (i32.const 1))
  (func (export "ganglion_init") (result i32)
    (drop (call $manifest (i32.const 1024) (i32.const 9)))
    (i32.const 0))
)
