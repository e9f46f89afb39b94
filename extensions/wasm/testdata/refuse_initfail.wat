;; refuse_initfail.wat: a module whose init fails with a message, which the
;; host must refuse to load.
;; Rebuild: wat2wasm refuse_initfail.wat -o refuse_initfail.wasm
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (import "ganglion" "set_error" (func $set_error (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 1024) "{\"name\":\"refuse_initfail\",\"version\":\"1.0.0\",\"abi\":1}")
  (data (i32.const 2048) "no database configured")
  (func (export "ganglion_abi_version") (result i32) (i32.const 1))
  (func (export "ganglion_init") (result i32)
    (drop (call $manifest (i32.const 1024) (i32.const 52)))
    (drop (call $set_error (i32.const 2048) (i32.const 22)))
    (i32.const 1))
)
