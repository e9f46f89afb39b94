;; refuse_initloop.wat: a module whose init never returns, which the host
;; must stop at its deadline and refuse to load.
;; Rebuild: wat2wasm refuse_initloop.wat -o refuse_initloop.wasm
(module
  ;; Every guest imports manifest: the host meters through it.
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "ganglion_abi_version") (result i32) (i32.const 1))
  (func (export "ganglion_init") (result i32)
    (loop $spin (br $spin))
    (i32.const 0))
)
