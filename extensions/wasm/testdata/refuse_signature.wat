;; refuse_signature.wat: a module whose ganglion_turn has the wrong
;; signature, (i32, i32) -> (i32 x 16) instead of (i32, i32) -> i32, which
;; the host must refuse to load: calling it would write 16 results into a
;; host stack of 2.
;; Rebuild: wat2wasm refuse_signature.wat -o refuse_signature.wasm
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (import "ganglion" "register" (func $register (param i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 1024) "{\"name\":\"refuse_signature\",\"version\":\"1.0.0\",\"abi\":1,\"hooks\":[\"turn\"]}")
  (func (export "ganglion_abi_version") (result i32) (i32.const 1))
  (func (export "ganglion_init") (result i32)
    (drop (call $manifest (i32.const 1024) (i32.const 70)))
    (drop (call $register (i32.const 1) (i32.const 0) (i32.const 0)))
    (i32.const 0))
  (func (export "ganglion_turn") (param i32 i32)
    (result i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32 i32)
    (i32.const 0) (i32.const -1) (i32.const -1) (i32.const -1)
    (i32.const -1) (i32.const -1) (i32.const -1) (i32.const -1)
    (i32.const -1) (i32.const -1) (i32.const -1) (i32.const -1)
    (i32.const -1) (i32.const -1) (i32.const -1) (i32.const -1))
)
