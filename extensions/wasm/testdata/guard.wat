;; guard.wat: a guardrail in hand-written WebAssembly, for the host's tests.
;; Rebuild: wat2wasm guard.wat -o guard.wasm
;;
;; A turn middleware: an input starting with "!" is refused without calling
;; next; any other input goes on. It logs each turn, and registers the tool
;; "pong", which answers "pong".
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (import "ganglion" "register" (func $register (param i32 i32 i32) (result i32)))
  (import "ganglion" "field" (func $field (param i32 i32 i32 i32) (result i32)))
  (import "ganglion" "set_field" (func $set_field (param i32 i32 i32 i32) (result i32)))
  (import "ganglion" "next" (func $next (param i32) (result i32)))
  (import "ganglion" "set_error" (func $set_error (param i32 i32) (result i32)))
  (import "ganglion" "log" (func $log (param i32 i32 i32) (result i32)))
  (memory (export "memory") 1)

  (data (i32.const 1024) "{\"name\":\"guard\",\"version\":\"1.0.0\",\"abi\":1,\"hooks\":[\"turn\"],\"tools\":[\"pong\"]}")
  (data (i32.const 2048) "{\"name\":\"pong\",\"description\":\"Answers pong.\",\"parameters\":{\"type\":\"object\"},\"category\":\"read\"}")
  (data (i32.const 2304) "{\"finish_reason\":\"text_response\",\"response\":{\"role\":\"assistant\",\"content\":\"refused by guard\"}}")
  (data (i32.const 2560) "{\"content\":\"pong\",\"is_error\":false}")
  (data (i32.const 2816) "next failed")
  (data (i32.const 2880) "guard saw a turn")

  (func (export "ganglion_abi_version") (result i32) (i32.const 1))

  (func (export "ganglion_init") (result i32)
    (drop (call $manifest (i32.const 1024) (i32.const 76)))
    (drop (call $register (i32.const 1) (i32.const 0) (i32.const 0)))
    (drop (call $register (i32.const 4) (i32.const 2048) (i32.const 94)))
    (i32.const 0))

  ;; ganglion_turn(ctx, id): refuse inputs starting with "!".
  (func (export "ganglion_turn") (param $ctx i32) (param $id i32) (result i32)
    (local $n i32)
    (drop (call $log (i32.const 0) (i32.const 2880) (i32.const 16)))
    ;; INPUT_TEXT (5) into 8192, 4096 bytes
    (local.set $n (call $field (local.get $ctx) (i32.const 5) (i32.const 8192) (i32.const 4096)))
    (if (i32.and (i32.gt_s (local.get $n) (i32.const 0))
                 (i32.eq (i32.load8_u (i32.const 8192)) (i32.const 33)))
      (then
        (drop (call $set_field (local.get $ctx) (i32.const 11) (i32.const 2304) (i32.const 94)))
        (return (i32.const 0))))
    (if (i32.ne (call $next (local.get $ctx)) (i32.const 0))
      (then
        (drop (call $set_error (i32.const 2816) (i32.const 11)))
        (return (i32.const 1))))
    (i32.const 0))

  ;; ganglion_tool(ctx, id): answer pong.
  (func (export "ganglion_tool") (param $ctx i32) (param $id i32) (result i32)
    (drop (call $set_field (local.get $ctx) (i32.const 11) (i32.const 2560) (i32.const 35)))
    (i32.const 0))
)
