;; refuse_noinit.wat: a module without ganglion_init, which the host must
;; refuse to load.
;; Rebuild: wat2wasm refuse_noinit.wat -o refuse_noinit.wasm
(module
  (memory (export "memory") 1)
  (func (export "ganglion_abi_version") (result i32) (i32.const 1))
)
