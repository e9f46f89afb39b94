;; refuse_files_abi1.wat: a module built for ABI version 2 whose manifest
;; says abi 1 and asks for files, which version 1 does not have: the host
;; must refuse to load it.
;; Rebuild: wat2wasm refuse_files_abi1.wat -o refuse_files_abi1.wasm
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 1024) "{\"name\":\"refuse_files_abi1\",\"version\":\"1.0.0\",\"abi\":1,\"files\":{\"read\":[\"docs/\"]}}")
  (func (export "ganglion_abi_version") (result i32) (i32.const 2))
  (func (export "ganglion_init") (result i32)
    (drop (call $manifest (i32.const 1024) (i32.const 81)))
    (i32.const 0))
)
