;; refuse_abi3.wat: a module whose ganglion_abi_version returns 3, which the
;; host must refuse to load.
;; Rebuild: wat2wasm refuse_abi3.wat -o refuse_abi3.wasm
(module
  ;; Every guest imports manifest: the host meters through it.
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "ganglion_abi_version") (result i32) (i32.const 3))
  (func (export "ganglion_init") (result i32) (i32.const 0))
)
