;; hostile_pause.wat: a guest that misuses pending items, for the host's
;; tests of pause and ganglion_pending (pause_test.go).
;; Rebuild: wat2wasm hostile_pause.wat -o hostile_pause.wasm
;;
;; Its manifest (abi 2) lists the pending kind "ask", which it registers
;; with resume. By the turn's input:
;;   - "flood": its step hook calls next, then opens items in a loop until
;;     the host refuses one, and fails with "flood=code: last_error".
;;   - "misuse": its step hook, before next, calls pause with a kind the
;;     manifest does not list, malformed JSON and a request that is not an
;;     object, and fails with "name=code: last_error" for each.
;;   - "turnpause": its turn hook calls pause, and fails the same way.
;; Its toolCall hook, on every call, opens an item, then calls next and
;; pause again, and fails with both refusals.
;; Any other input goes on to next. Its pending hook, whatever the phase,
;; tries to open an item and to call next (so to answer or run anything
;; itself), and refuses the action with both refusals.
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (import "ganglion" "register" (func $register (param i32 i32 i32) (result i32)))
  (import "ganglion" "field" (func $field (param i32 i32 i32 i32) (result i32)))
  (import "ganglion" "next" (func $next (param i32) (result i32)))
  (import "ganglion" "set_error" (func $set_error (param i32 i32) (result i32)))
  (import "ganglion" "last_error" (func $last_error (param i32 i32) (result i32)))
  (import "ganglion" "pause" (func $pause (param i32 i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 1)

  ;; Strings are NUL-terminated: memory is zero after each segment.
  (data (i32.const 1024) "{\"name\":\"hostile_pause\",\"version\":\"1.0.0\",\"abi\":2,\"hooks\":[\"turn\",\"step\",\"tool_call\"],\"pending\":[\"ask\"]}")
  (data (i32.const 1280) "{\"name\":\"ask\",\"resume\":true}")
  (data (i32.const 1344) "{\"kind\":\"ask\",\"request\":{\"q\":\"?\"}}")
  (data (i32.const 1408) "{\"kind\":\"other\",\"request\":{}}")
  (data (i32.const 1472) "{\"kind\":")
  (data (i32.const 1488) "{\"kind\":\"ask\",\"request\":[1]}")
  (data (i32.const 1536) "flood")
  (data (i32.const 1552) "misuse")
  (data (i32.const 1568) "turnpause")
  (data (i32.const 1600) "unlisted")
  (data (i32.const 1616) "malformed")
  (data (i32.const 1632) "notobject")
  (data (i32.const 1648) "pause")
  (data (i32.const 1664) "next")

  (func (export "ganglion_abi_version") (result i32) (i32.const 2))

  (func (export "ganglion_init") (result i32)
    (drop (call $manifest (i32.const 1024) (call $len (i32.const 1024))))
    (drop (call $register (i32.const 1) (i32.const 0) (i32.const 0)))
    (drop (call $register (i32.const 2) (i32.const 0) (i32.const 0)))
    (drop (call $register (i32.const 3) (i32.const 0) (i32.const 0)))
    (drop (call $register (i32.const 6) (i32.const 1280) (call $len (i32.const 1280))))
    (i32.const 0))

  ;; $open calls pause with the request at $req.
  (func $open (param $ctx i32) (param $req i32) (result i32)
    (call $pause (local.get $ctx) (local.get $req) (call $len (local.get $req)) (i32.const 20480) (i32.const 1024)))

  (func (export "ganglion_turn") (param $ctx i32) (param $id i32) (result i32)
    (if (i32.eqz (call $starts (local.get $ctx) (i32.const 1568)))
      (then (return (call $pass (local.get $ctx)))))
    (call $report (i32.const 1648) (call $open (local.get $ctx) (i32.const 1344)))
    (call $fail_report))

  (func (export "ganglion_step") (param $ctx i32) (param $id i32) (result i32)
    (local $code i32)
    (if (call $starts (local.get $ctx) (i32.const 1552))
      (then
        (call $report (i32.const 1600) (call $open (local.get $ctx) (i32.const 1408)))
        (call $report (i32.const 1616) (call $open (local.get $ctx) (i32.const 1472)))
        (call $report (i32.const 1632) (call $open (local.get $ctx) (i32.const 1488)))
        (return (call $fail_report))))
    (if (i32.eqz (call $starts (local.get $ctx) (i32.const 1536)))
      (then (return (call $pass (local.get $ctx)))))
    (drop (call $next (local.get $ctx)))
    (loop $again
      (local.set $code (call $open (local.get $ctx) (i32.const 1344)))
      (br_if $again (i32.ge_s (local.get $code) (i32.const 0))))
    (call $report (i32.const 1536) (local.get $code))
    (call $fail_report))

  (func (export "ganglion_tool_call") (param $ctx i32) (param $id i32) (result i32)
    (drop (call $open (local.get $ctx) (i32.const 1344)))
    (call $report (i32.const 1664) (call $next (local.get $ctx)))
    (call $report (i32.const 1648) (call $open (local.get $ctx) (i32.const 1344)))
    (call $fail_report))

  (func (export "ganglion_pending") (param $ctx i32) (param $id i32) (result i32)
    (call $report (i32.const 1648) (call $open (local.get $ctx) (i32.const 1344)))
    (call $report (i32.const 1664) (call $next (local.get $ctx)))
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
