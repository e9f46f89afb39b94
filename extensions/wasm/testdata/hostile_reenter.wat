;; hostile_reenter.wat: turn, step and toolCall middleware in one module, for
;; the host's hostile-module tests (run with limits: {max_depth: 2}).
;; Rebuild: wat2wasm hostile_reenter.wat -o hostile_reenter.wasm
;;
;; Each hook calls next and, if the rest of the chain failed, fails with the
;; host's message (last_error). The turn hook's next runs the step hook in
;; the same instance one level deeper (depth 1); when the model calls a tool,
;; the step hook's next runs the toolCall hook one level deeper again (depth
;; 2), past max_depth 2. The tests' script calls a tool only for an input
;; starting with "reenter".
;;
;; The step hook also misbehaves while the turn hook is parked in next: an
;; input starting with "steptrap" makes it trap (unreachable), one starting
;; with "steploop" makes it spin forever.
;;
;; With "reenter_outer" (run with a max_depth over 2), the toolCall hook
;; sets the result of the turn hook it is nested in, which is parked in
;; next, through the turn's handle, and fails with "outer set_field: PHASE"
;; if the host refused with PHASE, "outer set_field: 0" if it took it, and
;; "outer set_field: other" otherwise. With "reenter_emit", it appends a
;; message through the parked turn hook's handle instead, and fails with
;; "outer emit: PHASE", "outer emit: 0" or "outer emit: other" likewise.
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (import "ganglion" "register" (func $register (param i32 i32 i32) (result i32)))
  (import "ganglion" "field" (func $field (param i32 i32 i32 i32) (result i32)))
  (import "ganglion" "next" (func $next (param i32) (result i32)))
  (import "ganglion" "set_error" (func $set_error (param i32 i32) (result i32)))
  (import "ganglion" "last_error" (func $last_error (param i32 i32) (result i32)))
  (import "ganglion" "set_field" (func $set_field (param i32 i32 i32 i32) (result i32)))
  (import "ganglion" "emit" (func $emit (param i32 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (global $turn (mut i32) (i32.const 0))

  ;; Strings are NUL-terminated: memory is zero after each segment.
  (data (i32.const 1024) "{\"name\":\"hostile_reenter\",\"version\":\"1.0.0\",\"abi\":1,\"hooks\":[\"turn\",\"step\",\"tool_call\"]}")
  (data (i32.const 1536) "steptrap")
  (data (i32.const 1552) "steploop")
  (data (i32.const 1568) "reenter_outer")
  (data (i32.const 1600) "{\"finish_reason\":\"text_response\",\"response\":{\"content\":\"outer\"}}")
  (data (i32.const 1700) "outer set_field: PHASE")
  (data (i32.const 1728) "outer set_field: 0")
  (data (i32.const 1760) "outer set_field: other")
  (data (i32.const 1792) "reenter_emit")
  (data (i32.const 1808) "{\"type\":\"append\",\"message\":{\"role\":\"user\",\"content\":\"injected\"}}")
  (data (i32.const 1900) "outer emit: PHASE")
  (data (i32.const 1920) "outer emit: 0")
  (data (i32.const 1940) "outer emit: other")

  (func (export "ganglion_abi_version") (result i32) (i32.const 1))

  ;; ganglion_init: the manifest at 1024; turn, step and toolCall hooks.
  (func (export "ganglion_init") (result i32)
    (drop (call $manifest (i32.const 1024) (call $len (i32.const 1024))))
    (drop (call $register (i32.const 1) (i32.const 0) (i32.const 0)))
    (drop (call $register (i32.const 2) (i32.const 0) (i32.const 0)))
    (drop (call $register (i32.const 3) (i32.const 0) (i32.const 0)))
    (i32.const 0))

  (func (export "ganglion_turn") (param $ctx i32) (param $id i32) (result i32)
    (global.set $turn (local.get $ctx))
    (call $pass (local.get $ctx)))

  (func (export "ganglion_step") (param $ctx i32) (param $id i32) (result i32)
    (if (call $starts (local.get $ctx) (i32.const 1536))
      (then unreachable))
    (if (call $starts (local.get $ctx) (i32.const 1552))
      (then (loop $spin (br $spin))))
    (call $pass (local.get $ctx)))

  (func (export "ganglion_tool_call") (param $ctx i32) (param $id i32) (result i32)
    (local $code i32)
    (if (call $starts (global.get $turn) (i32.const 1568))
      (then
        (local.set $code (call $set_field (global.get $turn) (i32.const 11) (i32.const 1600) (call $len (i32.const 1600))))
        (if (i32.eq (local.get $code) (i32.const -8))
          (then (drop (call $set_error (i32.const 1700) (call $len (i32.const 1700)))))
          (else
            (if (i32.eqz (local.get $code))
              (then (drop (call $set_error (i32.const 1728) (call $len (i32.const 1728)))))
              (else (drop (call $set_error (i32.const 1760) (call $len (i32.const 1760))))))))
        (return (i32.const 1))))
    (if (call $starts (global.get $turn) (i32.const 1792))
      (then
        (call $report (call $emit (global.get $turn) (i32.const 1808) (call $len (i32.const 1808)))
          (i32.const 1900) (i32.const 1920) (i32.const 1940))
        (return (i32.const 1))))
    (call $pass (local.get $ctx)))

  ;; $report fails with the string at $phase, $zero or $other as $code is
  ;; PHASE (-8), 0 or anything else.
  (func $report (param $code i32) (param $phase i32) (param $zero i32) (param $other i32)
    (local $s i32)
    (local.set $s (local.get $other))
    (if (i32.eq (local.get $code) (i32.const -8)) (then (local.set $s (local.get $phase))))
    (if (i32.eqz (local.get $code)) (then (local.set $s (local.get $zero))))
    (drop (call $set_error (local.get $s) (call $len (local.get $s)))))

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
