;; hostile_phase.wat: a guest that calls imports where they are not allowed,
;; for the host's hostile-module tests.
;; Rebuild: wat2wasm hostile_phase.wat -o hostile_phase.wasm
;;
;; Its init calls next and field (hook imports) with handle 1 and keeps the
;; codes. The turn hook keeps its handle for the next call. By the input's
;; start:
;;   "twice"    calls next twice;
;;   "stale"    calls field, set_field, messages_len and next with the
;;              handle of the hook's previous call, which has ended;
;;   "register" calls register and manifest, which are for init only;
;; and fails with the codes it got ("name=code" pairs, in order; init's
;; first for "register"). An input starting with "passon" makes it call next
;; and, if next fails, return 1 without set_error: sdk/ABI.md says that
;; passes the failure on. Any other input goes on to next.
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (import "ganglion" "register" (func $register (param i32 i32 i32) (result i32)))
  (import "ganglion" "field" (func $field (param i32 i32 i32 i32) (result i32)))
  (import "ganglion" "next" (func $next (param i32) (result i32)))
  (import "ganglion" "set_error" (func $set_error (param i32 i32) (result i32)))
  (import "ganglion" "last_error" (func $last_error (param i32 i32) (result i32)))
  (import "ganglion" "set_field" (func $set_field (param i32 i32 i32 i32) (result i32)))
  (import "ganglion" "messages_len" (func $messages_len (param i32) (result i32)))
  (memory (export "memory") 1)

  ;; Strings are NUL-terminated: memory is zero after each segment.
  (data (i32.const 1024) "{\"name\":\"hostile_phase\",\"version\":\"1.0.0\",\"abi\":1,\"hooks\":[\"turn\"]}")
  (data (i32.const 1536) "twice")
  (data (i32.const 1552) "stale")
  (data (i32.const 1568) "register")
  (data (i32.const 1584) "{\"finish_reason\":\"text_response\",\"response\":{\"content\":\"stale\"}}")
  (data (i32.const 1700) "next")
  (data (i32.const 1712) "field")
  (data (i32.const 1728) "set_field")
  (data (i32.const 1744) "messages_len")
  (data (i32.const 1760) "register")
  (data (i32.const 1776) "manifest")
  (data (i32.const 1792) "init_next")
  (data (i32.const 1808) "init_field")
  (data (i32.const 1824) "no earlier handle")
  (data (i32.const 1856) "passon")

  (global $init_next (mut i32) (i32.const 1))
  (global $init_field (mut i32) (i32.const 1))
  ;; The handle of the hook's latest call, 0 before the first.
  (global $prev (mut i32) (i32.const 0))

  (func (export "ganglion_abi_version") (result i32) (i32.const 1))

  (func (export "ganglion_init") (result i32)
    (global.set $init_next (call $next (i32.const 1)))
    (global.set $init_field (call $field (i32.const 1) (i32.const 5) (i32.const 8192) (i32.const 4096)))
    (drop (call $manifest (i32.const 1024) (call $len (i32.const 1024))))
    (drop (call $register (i32.const 1) (i32.const 0) (i32.const 0)))
    (i32.const 0))

  (func (export "ganglion_turn") (param $ctx i32) (param $id i32) (result i32)
    (local $prev i32)
    (local.set $prev (global.get $prev))
    (global.set $prev (local.get $ctx))
    (if (call $starts (local.get $ctx) (i32.const 1536))
      (then
        (call $report (i32.const 1700) (call $next (local.get $ctx)))
        (call $report (i32.const 1700) (call $next (local.get $ctx)))
        (return (call $fail_report))))
    (if (call $starts (local.get $ctx) (i32.const 1552))
      (then
        (if (i32.or (i32.eqz (local.get $prev)) (i32.eq (local.get $prev) (local.get $ctx)))
          (then
            (drop (call $set_error (i32.const 1824) (call $len (i32.const 1824))))
            (return (i32.const 1))))
        (call $report (i32.const 1712) (call $field (local.get $prev) (i32.const 5) (i32.const 8192) (i32.const 4096)))
        (call $report (i32.const 1728) (call $set_field (local.get $prev) (i32.const 11) (i32.const 1584) (call $len (i32.const 1584))))
        (call $report (i32.const 1744) (call $messages_len (local.get $prev)))
        (call $report (i32.const 1700) (call $next (local.get $prev)))
        (return (call $fail_report))))
    (if (call $starts (local.get $ctx) (i32.const 1568))
      (then
        (call $report (i32.const 1792) (global.get $init_next))
        (call $report (i32.const 1808) (global.get $init_field))
        (call $report (i32.const 1760) (call $register (i32.const 1) (i32.const 0) (i32.const 0)))
        (call $report (i32.const 1776) (call $manifest (i32.const 1024) (call $len (i32.const 1024))))
        (return (call $fail_report))))
    (if (call $starts (local.get $ctx) (i32.const 1856))
      (then (return (i32.ne (call $next (local.get $ctx)) (i32.const 0)))))
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
