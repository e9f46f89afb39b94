;; refuse_http_abi1.wat: a module built for ABI version 2 whose manifest
;; says "abi": 1 yet asks for HTTP, which version 2 adds: the load fails
;; with "manifest: http needs abi 2".
;; Rebuild: wat2wasm refuse_http_abi1.wat -o refuse_http_abi1.wasm
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "{\"name\":\"refuse_http_abi1\",\"abi\":1,\"http\":[\"https://moderation.example.com\"]}")
  (func (export "ganglion_abi_version") (result i32) (i32.const 2))
  (func (export "ganglion_init") (result i32)
    (drop (call $manifest (i32.const 0) (i32.const 77)))
    (i32.const 0))
)
