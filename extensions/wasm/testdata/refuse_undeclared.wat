;; refuse_undeclared.wat: a module whose init registers a step hook its
;; manifest does not list, which the host must refuse to load.
;; Rebuild: wat2wasm refuse_undeclared.wat -o refuse_undeclared.wasm
;;
;; register answers DENIED; init then fails with the host's message
;; (last_error), as a guest should.
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (import "ganglion" "register" (func $register (param i32 i32 i32) (result i32)))
  (import "ganglion" "set_error" (func $set_error (param i32 i32) (result i32)))
  (import "ganglion" "last_error" (func $last_error (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 1024) "{\"name\":\"refuse_undeclared\",\"version\":\"1.0.0\",\"abi\":1,\"hooks\":[\"turn\"]}")
  (func (export "ganglion_abi_version") (result i32) (i32.const 1))
  (func (export "ganglion_init") (result i32)
    (local $n i32)
    (drop (call $manifest (i32.const 1024) (i32.const 71)))
    (if (i32.lt_s (call $register (i32.const 2) (i32.const 0) (i32.const 0)) (i32.const 0))
      (then
        (local.set $n (call $last_error (i32.const 4096) (i32.const 1024)))
        (drop (call $set_error (i32.const 4096) (local.get $n)))
        (return (i32.const 1))))
    (i32.const 0))
  (func (export "ganglion_step") (param i32 i32) (result i32) (i32.const 0))
)
