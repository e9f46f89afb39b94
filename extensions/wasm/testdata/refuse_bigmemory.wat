;; refuse_bigmemory.wat: a module that starts with 4 MiB of memory, which the
;; host must refuse to load under limits: {memory: 2MiB}.
;; Rebuild: wat2wasm refuse_bigmemory.wat -o refuse_bigmemory.wasm
(module
  (memory (export "memory") 64)
  (func (export "ganglion_abi_version") (result i32) (i32.const 1))
  (func (export "ganglion_init") (result i32) (i32.const 0))
)
