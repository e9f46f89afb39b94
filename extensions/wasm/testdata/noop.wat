;; noop.wat: the cheapest middleware, for benchmarks: its turn, step and
;; toolCall hooks call next and return. Rebuild: wat2wasm noop.wat -o noop.wasm
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (import "ganglion" "register" (func $register (param i32 i32 i32) (result i32)))
  (import "ganglion" "next" (func $next (param i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 1024) "{\"name\":\"noop\",\"abi\":1,\"hooks\":[\"turn\",\"step\",\"tool_call\"]}")

  (func (export "ganglion_abi_version") (result i32) (i32.const 1))
  (func (export "ganglion_init") (result i32)
    (drop (call $manifest (i32.const 1024) (i32.const 59)))
    (drop (call $register (i32.const 1) (i32.const 0) (i32.const 0)))
    (drop (call $register (i32.const 2) (i32.const 0) (i32.const 0)))
    (drop (call $register (i32.const 3) (i32.const 0) (i32.const 0)))
    (i32.const 0))
  (func $pass (param $ctx i32) (result i32)
    (if (i32.ne (call $next (local.get $ctx)) (i32.const 0)) (then (return (i32.const 1))))
    (i32.const 0))
  (func (export "ganglion_turn") (param $ctx i32) (param $id i32) (result i32) (call $pass (local.get $ctx)))
  (func (export "ganglion_step") (param $ctx i32) (param $id i32) (result i32) (call $pass (local.get $ctx)))
  (func (export "ganglion_tool_call") (param $ctx i32) (param $id i32) (result i32) (call $pass (local.get $ctx)))
)
