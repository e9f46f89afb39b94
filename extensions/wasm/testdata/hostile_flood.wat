;; hostile_flood.wat: a turn hook that floods the host with publish, emit,
;; log and stdout calls, for the host's hostile-module tests.
;; Rebuild: wat2wasm hostile_flood.wat -o hostile_flood.wasm
;;
;; By the input's start, the hook calls one import for ever, each time with
;; 64 KiB:
;;   "publish" publishes an event on flood.x;
;;   "emit"    appends a message to the conversation;
;;   "log"     logs a warning;
;;   "stdout"  writes to stdout (WASI fd_write).
;; It ignores what the host answers. The host must stop it at its deadline,
;; and bound what one call may publish, emit and log. With "until_" before
;; publish (then with no data), emit or log (then 7 bytes), it stops at
;; the first failure and fails with the host's message for it. Any other
;; input goes on to next.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (import "ganglion" "register" (func $register (param i32 i32 i32) (result i32)))
  (import "ganglion" "field" (func $field (param i32 i32 i32 i32) (result i32)))
  (import "ganglion" "next" (func $next (param i32) (result i32)))
  (import "ganglion" "set_error" (func $set_error (param i32 i32) (result i32)))
  (import "ganglion" "last_error" (func $last_error (param i32 i32) (result i32)))
  (import "ganglion" "publish" (func $publish (param i32 i32 i32 i32 i32) (result i32)))
  (import "ganglion" "emit" (func $emit (param i32 i32 i32) (result i32)))
  (import "ganglion" "log" (func $log (param i32 i32 i32) (result i32)))
  (memory (export "memory") 8)

  ;; Strings are NUL-terminated: memory is zero after each segment.
  (data (i32.const 1024) "{\"name\":\"hostile_flood\",\"version\":\"1.0.0\",\"abi\":1,\"hooks\":[\"turn\"],\"topics\":{\"publish\":[\"flood.*\"]}}")
  (data (i32.const 1536) "publish")
  (data (i32.const 1552) "emit")
  (data (i32.const 1568) "log")
  (data (i32.const 1584) "stdout")
  (data (i32.const 1600) "flood.x")
  (data (i32.const 1616) "until_publish")
  (data (i32.const 1632) "until_emit")
  (data (i32.const 1648) "until_log")
  ;; The publish data: a JSON string of 64 KiB of x (filled by $fill).
  (data (i32.const 65535) "\"")
  (data (i32.const 131072) "\"")
  ;; The emit event: a message whose content is 64 KiB of x.
  (data (i32.const 196550) "{\"type\":\"append\",\"message\":{\"role\":\"assistant\",\"content\":\"")
  (data (i32.const 262144) "\"}}")
  ;; The iovec of fd_write: 64 KiB of x.
  (data (i32.const 300000) "\00\00\01\00\00\00\01\00")

  (func (export "ganglion_abi_version") (result i32) (i32.const 1))

  ;; ganglion_init: the manifest at 1024, one turn hook.
  (func (export "ganglion_init") (result i32)
    (drop (call $manifest (i32.const 1024) (call $len (i32.const 1024))))
    (drop (call $register (i32.const 1) (i32.const 0) (i32.const 0)))
    (i32.const 0))

  (func $fill
    (memory.fill (i32.const 65536) (i32.const 120) (i32.const 65536))
    (memory.fill (i32.const 196608) (i32.const 120) (i32.const 65536)))

  (func (export "ganglion_turn") (param $ctx i32) (param $id i32) (result i32)
    (if (call $starts (local.get $ctx) (i32.const 1536))
      (then
        (call $fill)
        (loop $l
          (drop (call $publish (local.get $ctx) (i32.const 1600) (i32.const 7) (i32.const 65535) (i32.const 65538)))
          (br $l))))
    (if (call $starts (local.get $ctx) (i32.const 1552))
      (then
        (call $fill)
        (loop $l
          (drop (call $emit (local.get $ctx) (i32.const 196550) (i32.const 65597)))
          (br $l))))
    (if (call $starts (local.get $ctx) (i32.const 1568))
      (then
        (call $fill)
        (loop $l
          (drop (call $log (i32.const 4) (i32.const 65536) (i32.const 65536)))
          (br $l))))
    (if (call $starts (local.get $ctx) (i32.const 1584))
      (then
        (call $fill)
        (loop $l
          (drop (call $fd_write (i32.const 1) (i32.const 300000) (i32.const 1) (i32.const 300008)))
          (br $l))))
    (if (call $starts (local.get $ctx) (i32.const 1616))
      (then
        (loop $l
          (br_if $l (i32.eqz (call $publish (local.get $ctx) (i32.const 1600) (i32.const 7) (i32.const 0) (i32.const 0)))))
        (return (call $forward))))
    (if (call $starts (local.get $ctx) (i32.const 1632))
      (then
        (call $fill)
        (loop $l
          (br_if $l (i32.eqz (call $emit (local.get $ctx) (i32.const 196550) (i32.const 65597)))))
        (return (call $forward))))
    (if (call $starts (local.get $ctx) (i32.const 1648))
      (then
        (loop $l
          (br_if $l (i32.eqz (call $log (i32.const 4) (i32.const 1600) (i32.const 7)))))
        (return (call $forward))))
    (call $pass (local.get $ctx)))

  ;; $len is the length of the NUL-terminated string at $p.
  (func $len (param $p i32) (result i32)
    (local $n i32)
    (block $end
      (loop $scan
        (br_if $end (i32.eqz (i32.load8_u (i32.add (local.get $p) (local.get $n)))))
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (br $scan)))
    (local.get $n))

  ;; $starts reports whether the hook's input text (INPUT_TEXT, read into
  ;; 8192) starts with the NUL-terminated string at $s.
  (func $starts (param $ctx i32) (param $s i32) (result i32)
    (local $n i32) (local $k i32) (local $i i32)
    (local.set $n (call $field (local.get $ctx) (i32.const 5) (i32.const 8192) (i32.const 4096)))
    (local.set $k (call $len (local.get $s)))
    (if (i32.or (i32.lt_s (local.get $n) (local.get $k)) (i32.gt_s (local.get $n) (i32.const 4096)))
      (then (return (i32.const 0))))
    (block $end
      (loop $cmp
        (br_if $end (i32.ge_u (local.get $i) (local.get $k)))
        (if (i32.ne (i32.load8_u (i32.add (i32.const 8192) (local.get $i)))
                    (i32.load8_u (i32.add (local.get $s) (local.get $i))))
          (then (return (i32.const 0))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $cmp)))
    (i32.const 1))

  ;; $pass calls next; if the rest of the chain failed, it fails with the
  ;; host's message for it (last_error, read into 12288).
  (func $pass (param $ctx i32) (result i32)
    (if (i32.eqz (call $next (local.get $ctx)))
      (then (return (i32.const 0))))
    (call $forward))

  ;; $forward fails with the message of the last failed host call.
  (func $forward (result i32)
    (local $n i32)
    (local.set $n (call $last_error (i32.const 12288) (i32.const 4096)))
    (if (i32.gt_u (local.get $n) (i32.const 4096))
      (then (local.set $n (i32.const 0))))
    (drop (call $set_error (i32.const 12288) (local.get $n)))
    (i32.const 1))
)
