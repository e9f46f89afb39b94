;; refuse_noexport.wat: a module that registers a turn hook but does not
;; export ganglion_turn, which the host must refuse to load.
;; Rebuild: wat2wasm refuse_noexport.wat -o refuse_noexport.wasm
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (import "ganglion" "register" (func $register (param i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 1024) "{\"name\":\"refuse_noexport\",\"version\":\"1.0.0\",\"abi\":1,\"hooks\":[\"turn\"]}")
  (func (export "ganglion_abi_version") (result i32) (i32.const 1))
  (func (export "ganglion_init") (result i32)
    (drop (call $manifest (i32.const 1024) (i32.const 69)))
    (drop (call $register (i32.const 1) (i32.const 0) (i32.const 0)))
    (i32.const 0))
)
