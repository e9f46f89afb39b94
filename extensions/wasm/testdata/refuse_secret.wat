;; refuse_secret.wat: a module whose manifest asks for the secret API_KEY,
;; which the host must refuse to load when the config does not grant it.
;; Rebuild: wat2wasm refuse_secret.wat -o refuse_secret.wasm
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 1024) "{\"name\":\"refuse_secret\",\"version\":\"1.0.0\",\"abi\":1,\"secrets\":[\"API_KEY\"]}")
  (func (export "ganglion_abi_version") (result i32) (i32.const 1))
  (func (export "ganglion_init") (result i32)
    (drop (call $manifest (i32.const 1024) (i32.const 72)))
    (i32.const 0))
)
