;; refuse_nomemory.wat: a module that does not export its memory, which the
;; host must refuse to load.
;; Rebuild: wat2wasm refuse_nomemory.wat -o refuse_nomemory.wasm
(module
  (memory 1)
  (func (export "ganglion_abi_version") (result i32) (i32.const 1))
  (func (export "ganglion_init") (result i32) (i32.const 0))
)
