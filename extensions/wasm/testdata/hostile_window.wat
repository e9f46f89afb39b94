;; hostile_window.wat: a guest that misuses the window imports, for the
;; host's tests of window, window_apply and complete (window_test.go).
;; Rebuild: wat2wasm hostile_window.wat -o hostile_window.wasm
;;
;; Its manifest does not declare "models". Its step hook, for an input
;; starting with "badjson", calls window_apply and complete with requests
;; the host must refuse and fails with "name=code: last_error" for each,
;; separated by "; ". Its toolCall hook calls window, window_apply and
;; complete, which are for step hooks, and fails the same way. Any other
;; input goes on to next.
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (import "ganglion" "register" (func $register (param i32 i32 i32) (result i32)))
  (import "ganglion" "field" (func $field (param i32 i32 i32 i32) (result i32)))
  (import "ganglion" "next" (func $next (param i32) (result i32)))
  (import "ganglion" "set_error" (func $set_error (param i32 i32) (result i32)))
  (import "ganglion" "last_error" (func $last_error (param i32 i32) (result i32)))
  (import "ganglion" "window" (func $window (param i32 i32 i32) (result i32)))
  (import "ganglion" "window_apply" (func $window_apply (param i32 i32 i32 i32 i32) (result i32)))
  (import "ganglion" "complete" (func $complete (param i32 i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)

  ;; Strings are NUL-terminated: memory is zero after each segment.
  (data (i32.const 1024) "{\"name\":\"hostile_window\",\"version\":\"1.0.0\",\"abi\":1,\"hooks\":[\"step\",\"tool_call\"]}")
  (data (i32.const 1536) "badjson")
  (data (i32.const 1600) "malformed")
  (data (i32.const 1616) "{\"op\":")
  (data (i32.const 1664) "unknown_field")
  (data (i32.const 1680) "{\"op\":\"truncate\",\"ids\":[\"msg-0\"],\"bogus\":1}")
  (data (i32.const 1744) "unknown_op")
  (data (i32.const 1760) "{\"op\":\"shrink\"}")
  (data (i32.const 1792) "reduce_keep")
  (data (i32.const 1808) "{\"op\":\"reduce\",\"keep\":1.5}")
  (data (i32.const 1856) "complete")
  (data (i32.const 1872) "{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}")
  (data (i32.const 1936) "window")
  (data (i32.const 1952) "window_apply")
  (data (i32.const 1968) "{\"op\":\"reduce\",\"keep\":0.5}")

  (func (export "ganglion_abi_version") (result i32) (i32.const 1))

  (func (export "ganglion_init") (result i32)
    (drop (call $manifest (i32.const 1024) (call $len (i32.const 1024))))
    (drop (call $register (i32.const 2) (i32.const 0) (i32.const 0)))
    (drop (call $register (i32.const 3) (i32.const 0) (i32.const 0)))
    (i32.const 0))

  (func (export "ganglion_step") (param $ctx i32) (param $id i32) (result i32)
    (if (i32.eqz (call $starts (local.get $ctx) (i32.const 1536)))
      (then (return (call $pass (local.get $ctx)))))
    (call $apply (local.get $ctx) (i32.const 1600) (i32.const 1616))
    (call $apply (local.get $ctx) (i32.const 1664) (i32.const 1680))
    (call $apply (local.get $ctx) (i32.const 1744) (i32.const 1760))
    (call $apply (local.get $ctx) (i32.const 1792) (i32.const 1808))
    (call $report (i32.const 1856) (call $complete (local.get $ctx) (i32.const 1872) (call $len (i32.const 1872)) (i32.const 8192) (i32.const 4096)))
    (call $fail_report))

  (func (export "ganglion_tool_call") (param $ctx i32) (param $id i32) (result i32)
    (call $report (i32.const 1936) (call $window (local.get $ctx) (i32.const 8192) (i32.const 4096)))
    (call $report (i32.const 1952) (call $window_apply (local.get $ctx) (i32.const 1968) (call $len (i32.const 1968)) (i32.const 8192) (i32.const 4096)))
    (call $report (i32.const 1856) (call $complete (local.get $ctx) (i32.const 1872) (call $len (i32.const 1872)) (i32.const 8192) (i32.const 4096)))
    (call $fail_report))

  ;; $apply reports window_apply with the request at $req.
  (func $apply (param $ctx i32) (param $name i32) (param $req i32)
    (call $report (local.get $name)
      (call $window_apply (local.get $ctx) (local.get $req) (call $len (local.get $req)) (i32.const 8192) (i32.const 4096))))

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
  ;; host's message for it.
  (func $pass (param $ctx i32) (result i32)
    (local $n i32)
    (if (i32.eqz (call $next (local.get $ctx)))
      (then (return (i32.const 0))))
    (local.set $n (call $last_error (i32.const 12288) (i32.const 4096)))
    (if (i32.gt_u (local.get $n) (i32.const 4096))
      (then (local.set $n (i32.const 0))))
    (drop (call $set_error (i32.const 12288) (local.get $n)))
    (i32.const 1))

  ;; The report: "name=code: last_error" entries appended at 16384, given
  ;; to set_error.
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

  ;; $report appends "name=code: last_error", after "; " unless it is the
  ;; first. The last error is read straight into the report.
  (func $report (param $name i32) (param $code i32)
    (local $n i32)
    (if (i32.ne (global.get $out) (i32.const 16384))
      (then (call $put (i32.const 59)) (call $put (i32.const 32))))
    (call $say (local.get $name))
    (call $put (i32.const 61)) ;; =
    (call $num (local.get $code))
    (call $put (i32.const 58)) ;; :
    (call $put (i32.const 32))
    (local.set $n (call $last_error (global.get $out) (i32.const 1024)))
    (if (i32.le_u (local.get $n) (i32.const 1024))
      (then (global.set $out (i32.add (global.get $out) (local.get $n))))))

  ;; $fail_report fails the hook with the report as its message.
  (func $fail_report (result i32)
    (drop (call $set_error (i32.const 16384) (i32.sub (global.get $out) (i32.const 16384))))
    (global.set $out (i32.const 16384))
    (i32.const 1))
)
