;; last.wat: a turn middleware that reads the conversation's last message
;; (message index -1) into a 64 KiB buffer, then calls next: the cost of
;; reading context through a handle, for BenchmarkWASMHistory.
;; Rebuild: wat2wasm last.wat -o last.wasm
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (import "ganglion" "register" (func $register (param i32 i32 i32) (result i32)))
  (import "ganglion" "next" (func $next (param i32) (result i32)))
  (import "ganglion" "message" (func $message (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 2)
  (data (i32.const 1024) "{\"name\":\"last\",\"abi\":1,\"hooks\":[\"turn\"]}")

  (func (export "ganglion_abi_version") (result i32) (i32.const 1))
  (func (export "ganglion_init") (result i32)
    (drop (call $manifest (i32.const 1024) (i32.const 40)))
    (drop (call $register (i32.const 1) (i32.const 0) (i32.const 0)))
    (i32.const 0))
  (func (export "ganglion_turn") (param $ctx i32) (param $id i32) (result i32)
    (if (i32.lt_s (call $message (local.get $ctx) (i32.const -1) (i32.const 65536) (i32.const 65536)) (i32.const 0))
      (then (return (i32.const 1))))
    (if (i32.ne (call $next (local.get $ctx)) (i32.const 0)) (then (return (i32.const 1))))
    (i32.const 0))
)
