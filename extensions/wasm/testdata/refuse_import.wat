;; refuse_import.wat: a module importing functions the host does not
;; provide (env.clock, ganglion.spawn), which the host must refuse to load.
;; Rebuild: wat2wasm refuse_import.wat -o refuse_import.wasm
(module
  (import "env" "clock" (func $clock (result i64)))
  (import "ganglion" "spawn" (func $spawn (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "ganglion_abi_version") (result i32) (i32.const 1))
  (func (export "ganglion_init") (result i32) (i32.const 0))
)
