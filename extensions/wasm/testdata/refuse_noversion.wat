;; refuse_noversion.wat: a module without ganglion_abi_version, which the
;; host must refuse to load.
;; Rebuild: wat2wasm refuse_noversion.wat -o refuse_noversion.wasm
(module
  (memory (export "memory") 1)
  (func (export "ganglion_init") (result i32) (i32.const 0))
)
