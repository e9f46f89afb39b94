;; hostile_bounds.wat: a guest that passes the host pointers outside its
;; memory, for the host's hostile-module tests (run with secrets:
;; [HOSTILE_KEY]).
;; Rebuild: wat2wasm hostile_bounds.wat -o hostile_bounds.wasm
;;
;; Its init first calls manifest and register with a spec outside its memory
;; (then again, correctly), and keeps the codes. An input starting with
;; "bounds" makes the turn hook call next, then every import that takes a
;; (ptr, len) with one outside its 64 KiB memory: at 0xffffff00, and at
;; 0xfffffff0 with a length that wraps around 2^32 ("_wrap"), and last a
;; buffer too short for the value ("field_short": nothing is written, but
;; the buffer is still outside). It fails with
;; the codes it got, "name=code" pairs in the order of the calls; each should
;; be BOUNDS (-5), but for agents_request and agents_send, which answer
;; DENIED (-3) before reading anything until the host can call agents. Any
;; other input goes on to next.
;;
;; The window imports (window, window_apply, complete) are for step hooks:
;; its step hook, which runs nested in the turn hook's next and in the same
;; instance, calls them for an input starting with "bounds" (with the
;; request outside, then with a valid request and the answer buffer
;; outside: "_buf"), keeps their codes in globals for the turn hook's
;; report, and goes on to next.
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (import "ganglion" "register" (func $register (param i32 i32 i32) (result i32)))
  (import "ganglion" "field" (func $field (param i32 i32 i32 i32) (result i32)))
  (import "ganglion" "next" (func $next (param i32) (result i32)))
  (import "ganglion" "set_error" (func $set_error (param i32 i32) (result i32)))
  (import "ganglion" "last_error" (func $last_error (param i32 i32) (result i32)))
  (import "ganglion" "set_field" (func $set_field (param i32 i32 i32 i32) (result i32)))
  (import "ganglion" "message" (func $message (param i32 i32 i32 i32) (result i32)))
  (import "ganglion" "emit" (func $emit (param i32 i32 i32) (result i32)))
  (import "ganglion" "state_get" (func $state_get (param i32 i32 i32) (result i32)))
  (import "ganglion" "state_set" (func $state_set (param i32 i32 i32) (result i32)))
  (import "ganglion" "publish" (func $publish (param i32 i32 i32 i32 i32) (result i32)))
  (import "ganglion" "log" (func $log (param i32 i32 i32) (result i32)))
  (import "ganglion" "secret" (func $secret (param i32 i32 i32 i32 i32) (result i32)))
  (import "ganglion" "agents_request" (func $agents_request (param i32 i32 i32 i32 i32) (result i32)))
  (import "ganglion" "agents_send" (func $agents_send (param i32 i32 i32) (result i32)))
  (import "ganglion" "window" (func $window (param i32 i32 i32) (result i32)))
  (import "ganglion" "window_apply" (func $window_apply (param i32 i32 i32 i32 i32) (result i32)))
  (import "ganglion" "complete" (func $complete (param i32 i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)

  ;; Strings are NUL-terminated: memory is zero after each segment.
  (data (i32.const 1024) "{\"name\":\"hostile_bounds\",\"version\":\"1.0.0\",\"abi\":1,\"hooks\":[\"turn\",\"step\"],\"topics\":{\"publish\":[\"bounds.*\"]},\"secrets\":[\"HOSTILE_KEY\"],\"state\":true,\"models\":true}")
  (data (i32.const 1536) "bounds")
  (data (i32.const 1552) "bounds.event")
  (data (i32.const 1568) "{}")
  (data (i32.const 1600) "manifest")
  (data (i32.const 1616) "register")
  (data (i32.const 1632) "field")
  (data (i32.const 1648) "field_wrap")
  (data (i32.const 1664) "set_field")
  (data (i32.const 1680) "set_field_wrap")
  (data (i32.const 1696) "message")
  (data (i32.const 1712) "emit")
  (data (i32.const 1728) "state_set")
  (data (i32.const 1744) "state_get")
  (data (i32.const 1760) "publish_topic")
  (data (i32.const 1776) "publish_data")
  (data (i32.const 1792) "log")
  (data (i32.const 1808) "secret")
  (data (i32.const 1824) "set_error")
  (data (i32.const 1840) "last_error")
  (data (i32.const 1856) "agents_request")
  (data (i32.const 1872) "agents_send")
  (data (i32.const 1888) "field_short")
  (data (i32.const 1904) "window")
  (data (i32.const 1920) "window_apply")
  (data (i32.const 1936) "window_apply_buf")
  (data (i32.const 1956) "complete")
  (data (i32.const 1972) "complete_buf")
  (data (i32.const 2048) "{\"op\":\"reduce\",\"keep\":0.5}")
  (data (i32.const 2112) "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")

  ;; The codes of init's out-of-bounds manifest and register calls.
  (global $init_manifest (mut i32) (i32.const 1))
  (global $init_register (mut i32) (i32.const 1))

  ;; The codes of the step hook's window calls (1: not called).
  (global $window (mut i32) (i32.const 1))
  (global $window_apply (mut i32) (i32.const 1))
  (global $window_apply_buf (mut i32) (i32.const 1))
  (global $complete (mut i32) (i32.const 1))
  (global $complete_buf (mut i32) (i32.const 1))

  (func (export "ganglion_abi_version") (result i32) (i32.const 1))

  (func (export "ganglion_init") (result i32)
    (global.set $init_manifest (call $manifest (i32.const 0xffffff00) (i32.const 64)))
    (drop (call $manifest (i32.const 1024) (call $len (i32.const 1024))))
    (global.set $init_register (call $register (i32.const 1) (i32.const 0xffffff00) (i32.const 16)))
    (drop (call $register (i32.const 1) (i32.const 0) (i32.const 0)))
    (drop (call $register (i32.const 2) (i32.const 0) (i32.const 0)))
    (i32.const 0))

  (func (export "ganglion_step") (param $ctx i32) (param $id i32) (result i32)
    (if (call $starts (local.get $ctx) (i32.const 1536))
      (then
        (global.set $window (call $window (local.get $ctx) (i32.const 0xffffff00) (i32.const 4096)))
        (global.set $window_apply (call $window_apply (local.get $ctx) (i32.const 0xffffff00) (i32.const 16) (i32.const 8192) (i32.const 4096)))
        (global.set $window_apply_buf (call $window_apply (local.get $ctx) (i32.const 2048) (call $len (i32.const 2048)) (i32.const 0xffffff00) (i32.const 4096)))
        (global.set $complete (call $complete (local.get $ctx) (i32.const 0xffffff00) (i32.const 16) (i32.const 8192) (i32.const 4096)))
        (global.set $complete_buf (call $complete (local.get $ctx) (i32.const 2112) (call $len (i32.const 2112)) (i32.const 0xffffff00) (i32.const 4096)))))
    (call $pass (local.get $ctx)))

  (func (export "ganglion_turn") (param $ctx i32) (param $id i32) (result i32)
    (if (i32.eqz (call $starts (local.get $ctx) (i32.const 1536)))
      (then (return (call $pass (local.get $ctx)))))
    ;; next first, so that the conversation has messages to read.
    (if (call $next (local.get $ctx))
      (then (return (call $forward))))
    (call $report (i32.const 1600) (global.get $init_manifest))
    (call $report (i32.const 1616) (global.get $init_register))
    (call $report (i32.const 1632) (call $field (local.get $ctx) (i32.const 5) (i32.const 0xffffff00) (i32.const 4096)))
    (call $report (i32.const 1648) (call $field (local.get $ctx) (i32.const 5) (i32.const 0xfffffff0) (i32.const 32)))
    (call $report (i32.const 1664) (call $set_field (local.get $ctx) (i32.const 11) (i32.const 0xffffff00) (i32.const 16)))
    (call $report (i32.const 1680) (call $set_field (local.get $ctx) (i32.const 11) (i32.const 0xfffffff0) (i32.const 32)))
    (call $report (i32.const 1696) (call $message (local.get $ctx) (i32.const -1) (i32.const 0xffffff00) (i32.const 4096)))
    (call $report (i32.const 1712) (call $emit (local.get $ctx) (i32.const 0xffffff00) (i32.const 16)))
    (call $report (i32.const 1728) (call $state_set (local.get $ctx) (i32.const 0xffffff00) (i32.const 16)))
    ;; state_get has something to give only once a state is set.
    (drop (call $state_set (local.get $ctx) (i32.const 1568) (i32.const 2)))
    (call $report (i32.const 1744) (call $state_get (local.get $ctx) (i32.const 0xffffff00) (i32.const 4096)))
    (call $report (i32.const 1760) (call $publish (local.get $ctx) (i32.const 0xffffff00) (i32.const 16) (i32.const 1568) (i32.const 2)))
    (call $report (i32.const 1776) (call $publish (local.get $ctx) (i32.const 1552) (i32.const 12) (i32.const 0xffffff00) (i32.const 16)))
    (call $report (i32.const 1792) (call $log (i32.const 0) (i32.const 0xffffff00) (i32.const 16)))
    (call $report (i32.const 1808) (call $secret (local.get $ctx) (i32.const 0xffffff00) (i32.const 11) (i32.const 8192) (i32.const 4096)))
    (call $report (i32.const 1856) (call $agents_request (local.get $ctx) (i32.const 0xffffff00) (i32.const 16) (i32.const 0xffffff00) (i32.const 4096)))
    (call $report (i32.const 1872) (call $agents_send (local.get $ctx) (i32.const 0xffffff00) (i32.const 16)))
    (call $report (i32.const 1904) (global.get $window))
    (call $report (i32.const 1920) (global.get $window_apply))
    (call $report (i32.const 1936) (global.get $window_apply_buf))
    (call $report (i32.const 1956) (global.get $complete))
    (call $report (i32.const 1972) (global.get $complete_buf))
    (call $report (i32.const 1824) (call $set_error (i32.const 0xffffff00) (i32.const 16)))
    (call $report (i32.const 1840) (call $last_error (i32.const 0xffffff00) (i32.const 4096)))
    (call $report (i32.const 1888) (call $field (local.get $ctx) (i32.const 5) (i32.const 0xffffff00) (i32.const 2)))
    (call $fail_report))

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

  ;; The report: " name=code" pairs appended at 16384, given to set_error.
  (global $out (mut i32) (i32.const 16384))

  (func $put (param $b i32)
    (i32.store8 (global.get $out) (local.get $b))
    (global.set $out (i32.add (global.get $out) (i32.const 1))))

  ;; $say appends the NUL-terminated string at $s.
  (func $say (param $s i32)
    (local $i i32) (local $c i32)
    (block $end
      (loop $copy
        (local.set $c (i32.load8_u (i32.add (local.get $s) (local.get $i))))
        (br_if $end (i32.eqz (local.get $c)))
        (call $put (local.get $c))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $copy))))

  ;; $num appends $v in decimal.
  (func $num (param $v i32)
    (local $d i32)
    (if (i32.lt_s (local.get $v) (i32.const 0))
      (then
        (call $put (i32.const 45)) ;; -
        (local.set $v (i32.sub (i32.const 0) (local.get $v)))))
    (local.set $d (i32.const 1))
    (block $top
      (loop $up
        (br_if $top (i32.gt_u (local.get $d) (i32.div_u (local.get $v) (i32.const 10))))
        (local.set $d (i32.mul (local.get $d) (i32.const 10)))
        (br $up)))
    (loop $digit
      (call $put (i32.add (i32.const 48) (i32.div_u (local.get $v) (local.get $d))))
      (local.set $v (i32.rem_u (local.get $v) (local.get $d)))
      (local.set $d (i32.div_u (local.get $d) (i32.const 10)))
      (br_if $digit (local.get $d))))

  ;; $report appends "name=code", after a space unless it is the first.
  (func $report (param $name i32) (param $code i32)
    (if (i32.ne (global.get $out) (i32.const 16384))
      (then (call $put (i32.const 32))))
    (call $say (local.get $name))
    (call $put (i32.const 61)) ;; =
    (call $num (local.get $code)))

  ;; $fail_report fails the hook with the report as its message.
  (func $fail_report (result i32)
    (drop (call $set_error (i32.const 16384) (i32.sub (global.get $out) (i32.const 16384))))
    (global.set $out (i32.const 16384))
    (i32.const 1))
)
