;; refuse_pending_abi1.wat: a version 1 module whose manifest lists pending
;; kinds, which version 2 adds: the host must refuse to load it.
;; Rebuild: wat2wasm refuse_pending_abi1.wat -o refuse_pending_abi1.wasm
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 1024) "{\"abi\":1,\"pending\":[\"ask\"]}")
  (func (export "ganglion_abi_version") (result i32) (i32.const 1))
  (func (export "ganglion_init") (result i32)
    (drop (call $manifest (i32.const 1024) (i32.const 27)))
    (i32.const 0))
)
