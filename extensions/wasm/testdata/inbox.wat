;; inbox.wat: a guest that registers an inbox (sdk/ABI.md, "inbox") and
;; logs what the host writes there, for TestInbox.
;; Rebuild: wat2wasm inbox.wat -o inbox.wasm
;;
;; Its _initialize and init first try registrations the host must refuse
;; (before init, before the manifest, a wrong length, an address not a
;; multiple of 8, one outside memory), then register 24 bytes at 4096, then
;; try again. Given a
;; config (any), it registers "lazily" instead: not in init, but at the
;; start of each turn hook (the first succeeds). Each try logs "inbox CODE
;; MESSAGE" (CODE the result negated, MESSAGE last_error's text when it
;; failed).
;;
;; Each hook logs what the inbox holds as it starts and after its next
;; returns: its kind, "=" if the inbox names the hook's handle (else "!"),
;; and the two generations as hex ("turn = 0500000000000000
;; 0000000000000000"). A turn hook whose input starts with "set" first
;; sets its input to "changed" and logs the inbox again ("turn set"). The
;; turn hook ends by trying to register the inbox once more.
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (import "ganglion" "register" (func $register (param i32 i32 i32) (result i32)))
  (import "ganglion" "next" (func $next (param i32) (result i32)))
  (import "ganglion" "log" (func $log (param i32 i32 i32) (result i32)))
  (import "ganglion" "last_error" (func $last_error (param i32 i32) (result i32)))
  (import "ganglion" "inbox" (func $inbox (param i32 i32) (result i32)))
  (import "ganglion" "field" (func $field (param i32 i32 i32 i32) (result i32)))
  (import "ganglion" "set_field" (func $set_field (param i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)

  ;; Strings are NUL-terminated: memory is zero after each segment.
  (data (i32.const 1024) "{\"name\":\"inbox\",\"abi\":1,\"hooks\":[\"turn\",\"step\",\"tool_call\"]}")
  (data (i32.const 2048) "inbox ")
  (data (i32.const 2064) "turn ")
  (data (i32.const 2080) "step ")
  (data (i32.const 2096) "tool_call ")
  (data (i32.const 2112) "0123456789abcdef")
  (data (i32.const 2128) "turn set ")
  (data (i32.const 2144) "turn next ")
  (data (i32.const 2160) "step next ")
  (data (i32.const 2176) "{\"kind\":\"user_message\",\"text\":\"changed\"}")
  ;; The inbox is at 4096; the input text is read to 6144; log lines are
  ;; built at 8192.

  (func $len (param $p i32) (result i32)
    (local $n i32)
    (block $done
      (loop $scan
        (br_if $done (i32.eqz (i32.load8_u (i32.add (local.get $p) (local.get $n)))))
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (br $scan)))
    (local.get $n))

  ;; copy writes the string at src to dst and returns the end.
  (func $copy (param $dst i32) (param $src i32) (result i32)
    (local $n i32)
    (local.set $n (call $len (local.get $src)))
    (memory.copy (local.get $dst) (local.get $src) (local.get $n))
    (i32.add (local.get $dst) (local.get $n)))

  ;; hex writes n bytes at src as hex digits to dst and returns the end.
  (func $hex (param $dst i32) (param $src i32) (param $n i32) (result i32)
    (local $i i32) (local $b i32)
    (block $done
      (loop $each
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $b (i32.load8_u (i32.add (local.get $src) (local.get $i))))
        (i32.store8 (local.get $dst) (i32.load8_u (i32.add (i32.const 2112) (i32.shr_u (local.get $b) (i32.const 4)))))
        (i32.store8 (i32.add (local.get $dst) (i32.const 1)) (i32.load8_u (i32.add (i32.const 2112) (i32.and (local.get $b) (i32.const 15)))))
        (local.set $dst (i32.add (local.get $dst) (i32.const 2)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $each)))
    (local.get $dst))

  ;; try registers (p, n) as the inbox and logs how it went.
  (func $try (param $p i32) (param $n i32)
    (local $code i32) (local $end i32)
    (local.set $code (call $inbox (local.get $p) (local.get $n)))
    (local.set $end (call $copy (i32.const 8192) (i32.const 2048)))
    (i32.store8 (local.get $end) (i32.add (i32.const 48) (i32.sub (i32.const 0) (local.get $code))))
    (local.set $end (i32.add (local.get $end) (i32.const 1)))
    (if (i32.ne (local.get $code) (i32.const 0))
      (then
        (i32.store8 (local.get $end) (i32.const 32))
        (local.set $end (i32.add (local.get $end)
          (i32.add (i32.const 1) (call $last_error (i32.add (local.get $end) (i32.const 1)) (i32.const 1024)))))))
    (drop (call $log (i32.const 0) (i32.const 8192) (i32.sub (local.get $end) (i32.const 8192)))))

  ;; report logs the label, whether the inbox names ctx, and the inbox's
  ;; generations.
  (func $report (param $label i32) (param $ctx i32)
    (local $end i32)
    (local.set $end (call $copy (i32.const 8192) (local.get $label)))
    (i32.store8 (local.get $end)
      (select (i32.const 61) (i32.const 33)
        (i64.eq (i64.load (i32.const 4096)) (i64.extend_i32_u (local.get $ctx)))))
    (i32.store8 (i32.add (local.get $end) (i32.const 1)) (i32.const 32))
    (local.set $end (call $hex (i32.add (local.get $end) (i32.const 2)) (i32.const 4104) (i32.const 8)))
    (i32.store8 (local.get $end) (i32.const 32))
    (local.set $end (call $hex (i32.add (local.get $end) (i32.const 1)) (i32.const 4112) (i32.const 8)))
    (drop (call $log (i32.const 0) (i32.const 8192) (i32.sub (local.get $end) (i32.const 8192)))))

  ;; pass calls next and answers the hook's result code.
  (func $pass (param $ctx i32) (result i32)
    (if (i32.ne (call $next (local.get $ctx)) (i32.const 0)) (then (return (i32.const 1))))
    (i32.const 0))

  ;; lazy is 1 when the config asks to register the inbox in a hook.
  (global $lazy (mut i32) (i32.const 0))

  (func (export "ganglion_abi_version") (result i32) (i32.const 1))

  ;; A reactor's _initialize runs before ganglion_init: no inbox there.
  (func (export "_initialize")
    (call $try (i32.const 4096) (i32.const 24)))

  (func (export "ganglion_init") (result i32)
    (call $try (i32.const 4096) (i32.const 24))
    (drop (call $manifest (i32.const 1024) (call $len (i32.const 1024))))
    (call $try (i32.const 4096) (i32.const 8))
    (call $try (i32.const 4100) (i32.const 24))
    (call $try (i32.const 65528) (i32.const 24))
    ;; CONFIG (14) is "null" (4 bytes) without a config.
    (global.set $lazy (i32.gt_s (call $field (i32.const 0) (i32.const 14) (i32.const 6144) (i32.const 2048)) (i32.const 4)))
    (if (i32.eqz (global.get $lazy))
      (then
        (call $try (i32.const 4096) (i32.const 24))
        (call $try (i32.const 4096) (i32.const 24))))
    (drop (call $register (i32.const 1) (i32.const 0) (i32.const 0)))
    (drop (call $register (i32.const 2) (i32.const 0) (i32.const 0)))
    (drop (call $register (i32.const 3) (i32.const 0) (i32.const 0)))
    (i32.const 0))

  (func (export "ganglion_turn") (param $ctx i32) (param $id i32) (result i32)
    (local $code i32)
    (if (global.get $lazy) (then (call $try (i32.const 4096) (i32.const 24))))
    (call $report (i32.const 2064) (local.get $ctx))
    ;; INPUT_TEXT (5) into 6144; an input starting with "set" sets INPUT (4).
    (if (i32.and
          (i32.ge_s (call $field (local.get $ctx) (i32.const 5) (i32.const 6144) (i32.const 2048)) (i32.const 3))
          (i32.eq (i32.and (i32.load (i32.const 6144)) (i32.const 0xffffff)) (i32.const 0x746573)))
      (then
        (drop (call $set_field (local.get $ctx) (i32.const 4) (i32.const 2176) (call $len (i32.const 2176))))
        (call $report (i32.const 2128) (local.get $ctx))))
    (local.set $code (call $pass (local.get $ctx)))
    (call $report (i32.const 2144) (local.get $ctx))
    (call $try (i32.const 4096) (i32.const 24))
    (local.get $code))
  (func (export "ganglion_step") (param $ctx i32) (param $id i32) (result i32)
    (local $code i32)
    (call $report (i32.const 2080) (local.get $ctx))
    (local.set $code (call $pass (local.get $ctx)))
    (call $report (i32.const 2160) (local.get $ctx))
    (local.get $code))
  (func (export "ganglion_tool_call") (param $ctx i32) (param $id i32) (result i32)
    (call $report (i32.const 2096) (local.get $ctx))
    (call $pass (local.get $ctx)))
)
