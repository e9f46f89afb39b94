;; hostile_huge.wat: a turn hook that hands the host values too large for
;; it, for the host's hostile-module tests (run with limits: {max_payload:
;; 1KiB}).
;; Rebuild: wat2wasm hostile_huge.wat -o hostile_huge.wasm
;;
;; An input starting with "huge" makes the hook pass set_field, log and
;; set_error values over max_payload (2 KiB inside its memory, 2 GiB) and
;; over its memory (1 KiB at 65024, in a 64 KiB memory), then fail with the
;; codes it got: "name=code" pairs, in the order of the calls. Any other
;; input goes on to next.
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (import "ganglion" "register" (func $register (param i32 i32 i32) (result i32)))
  (import "ganglion" "field" (func $field (param i32 i32 i32 i32) (result i32)))
  (import "ganglion" "next" (func $next (param i32) (result i32)))
  (import "ganglion" "set_error" (func $set_error (param i32 i32) (result i32)))
  (import "ganglion" "last_error" (func $last_error (param i32 i32) (result i32)))
  (import "ganglion" "set_field" (func $set_field (param i32 i32 i32 i32) (result i32)))
  (import "ganglion" "log" (func $log (param i32 i32 i32) (result i32)))
  (memory (export "memory") 1)

  ;; Strings are NUL-terminated: memory is zero after each segment.
  (data (i32.const 1024) "{\"name\":\"hostile_huge\",\"version\":\"1.0.0\",\"abi\":1,\"hooks\":[\"turn\"]}")
  (data (i32.const 1536) "huge")
  (data (i32.const 1600) "set_field")
  (data (i32.const 1616) "log")
  (data (i32.const 1632) "set_error")

  (func (export "ganglion_abi_version") (result i32) (i32.const 1))

  ;; ganglion_init: the manifest at 1024, one turn hook.
  (func (export "ganglion_init") (result i32)
    (drop (call $manifest (i32.const 1024) (call $len (i32.const 1024))))
    (drop (call $register (i32.const 1) (i32.const 0) (i32.const 0)))
    (i32.const 0))

  (func (export "ganglion_turn") (param $ctx i32) (param $id i32) (result i32)
    (if (call $starts (local.get $ctx) (i32.const 1536))
      (then
        ;; over max_payload, inside the memory
        (call $report (i32.const 1600) (call $set_field (local.get $ctx) (i32.const 11) (i32.const 0) (i32.const 2048)))
        (call $report (i32.const 1616) (call $log (i32.const 8) (i32.const 0) (i32.const 2048)))
        (call $report (i32.const 1632) (call $set_error (i32.const 0) (i32.const 2048)))
        ;; over max_payload and the memory
        (call $report (i32.const 1600) (call $set_field (local.get $ctx) (i32.const 11) (i32.const 0) (i32.const 0x7fffffff)))
        (call $report (i32.const 1616) (call $log (i32.const 8) (i32.const 0) (i32.const 0x7fffffff)))
        ;; under max_payload, past the end of the memory
        (call $report (i32.const 1600) (call $set_field (local.get $ctx) (i32.const 11) (i32.const 65024) (i32.const 1024)))
        (call $report (i32.const 1616) (call $log (i32.const 8) (i32.const 65024) (i32.const 1024)))
        (call $report (i32.const 1632) (call $set_error (i32.const 65024) (i32.const 1024)))
        (return (call $fail_report))))
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
