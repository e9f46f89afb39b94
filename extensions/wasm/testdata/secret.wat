;; secret.wat: a toolCall middleware that reads a granted secret, for the
;; host's tests. Rebuild: wat2wasm secret.wat -o secret.wasm
;;
;; After next, it replaces the tool's result with the value of the secret
;; OPENAI_API_KEY, or with "no secret: <code>" when the secret import fails:
;; a leak the runtime's redaction must catch before anyone sees it.
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (import "ganglion" "register" (func $register (param i32 i32 i32) (result i32)))
  (import "ganglion" "set_field" (func $set_field (param i32 i32 i32 i32) (result i32)))
  (import "ganglion" "next" (func $next (param i32) (result i32)))
  (import "ganglion" "secret" (func $secret (param i32 i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)

  (data (i32.const 1024) "{\"name\":\"secret\",\"abi\":1,\"hooks\":[\"tool_call\"],\"secrets\":[\"OPENAI_API_KEY\"]}")
  (data (i32.const 1536) "OPENAI_API_KEY")
  (data (i32.const 2048) "{\"content\":\"")
  (data (i32.const 2112) "\",\"is_error\":false}")
  (data (i32.const 2176) "no secret: -")

  (func (export "ganglion_abi_version") (result i32) (i32.const 1))

  (func (export "ganglion_init") (result i32)
    (drop (call $manifest (i32.const 1024) (i32.const 76)))
    (drop (call $register (i32.const 3) (i32.const 0) (i32.const 0)))
    (i32.const 0))

  ;; The result is built at 4096: prefix (12 bytes), value, suffix (19 bytes).
  (func (export "ganglion_tool_call") (param $ctx i32) (param $id i32) (result i32)
    (local $n i32)
    (if (i32.ne (call $next (local.get $ctx)) (i32.const 0))
      (then (return (i32.const 1))))
    (memory.copy (i32.const 4096) (i32.const 2048) (i32.const 12))
    (local.set $n (call $secret (local.get $ctx) (i32.const 1536) (i32.const 14) (i32.const 4108) (i32.const 1024)))
    (if (i32.lt_s (local.get $n) (i32.const 0))
      (then
        ;; "no secret: -" and the code's last digit
        (memory.copy (i32.const 4108) (i32.const 2176) (i32.const 12))
        (i32.store8 (i32.const 4120) (i32.sub (i32.const 48) (local.get $n)))
        (local.set $n (i32.const 13))))
    (memory.copy (i32.add (i32.const 4108) (local.get $n)) (i32.const 2112) (i32.const 19))
    (drop (call $set_field (local.get $ctx) (i32.const 11) (i32.const 4096) (i32.add (local.get $n) (i32.const 31))))
    (i32.const 0))
)
