;; hostile_bulk.wat: a turn hook that loops on bulk memory and table
;; operations, for the host's hostile-module tests.
;; Rebuild: wat2wasm hostile_bulk.wat -o hostile_bulk.wasm
;;
;; By the input's start, the hook loops for ever on one operation:
;;   "copy"    memory.copy of 16 MiB;
;;   "fill"    memory.fill of 32 MiB;
;;   "meminit" memory.init of a 16-byte segment;
;;   "tfill"   table.fill of 1,000,000 elements;
;;   "tcopy"   table.copy of 500,000 elements;
;;   "tinit"   table.init of a 4-element segment.
;; Each iteration is one loop header, which metering counts as one unit:
;; unless the host charges an operation by its size, 10,000 iterations of
;; them run between two checks of the deadline, which takes seconds to
;; minutes. Any other input
;; goes on to next.
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (import "ganglion" "register" (func $register (param i32 i32 i32) (result i32)))
  (import "ganglion" "field" (func $field (param i32 i32 i32 i32) (result i32)))
  (import "ganglion" "next" (func $next (param i32) (result i32)))
  (import "ganglion" "set_error" (func $set_error (param i32 i32) (result i32)))
  (import "ganglion" "last_error" (func $last_error (param i32 i32) (result i32)))
  (memory (export "memory") 512)
  (table $t 1000000 funcref)

  ;; Strings are NUL-terminated: memory is zero after each segment.
  (data (i32.const 1024) "{\"name\":\"hostile_bulk\",\"version\":\"1.0.0\",\"abi\":1,\"hooks\":[\"turn\"]}")
  (data (i32.const 1536) "copy")
  (data (i32.const 1552) "fill")
  (data (i32.const 1568) "meminit")
  (data (i32.const 1584) "tfill")
  (data (i32.const 1600) "tcopy")
  (data (i32.const 1616) "tinit")
  (data $seg "0123456789abcdef")
  (elem $e func $nothing $nothing $nothing $nothing)

  (func $nothing)

  (func (export "ganglion_abi_version") (result i32) (i32.const 1))

  ;; ganglion_init: the manifest at 1024, one turn hook.
  (func (export "ganglion_init") (result i32)
    (drop (call $manifest (i32.const 1024) (call $len (i32.const 1024))))
    (drop (call $register (i32.const 1) (i32.const 0) (i32.const 0)))
    (i32.const 0))

  (func (export "ganglion_turn") (param $ctx i32) (param $id i32) (result i32)
    (if (call $starts (local.get $ctx) (i32.const 1536))
      (then (loop $l (memory.copy (i32.const 0) (i32.const 16777216) (i32.const 16777216)) (br $l))))
    (if (call $starts (local.get $ctx) (i32.const 1552))
      (then (loop $l (memory.fill (i32.const 0) (i32.const 0) (i32.const 33554432)) (br $l))))
    (if (call $starts (local.get $ctx) (i32.const 1568))
      (then (loop $l (memory.init $seg (i32.const 0) (i32.const 0) (i32.const 16)) (br $l))))
    (if (call $starts (local.get $ctx) (i32.const 1584))
      (then (loop $l (table.fill $t (i32.const 0) (ref.null func) (i32.const 1000000)) (br $l))))
    (if (call $starts (local.get $ctx) (i32.const 1600))
      (then (loop $l (table.copy $t $t (i32.const 0) (i32.const 500000) (i32.const 500000)) (br $l))))
    (if (call $starts (local.get $ctx) (i32.const 1616))
      (then (loop $l (table.init $t $e (i32.const 0) (i32.const 0) (i32.const 4)) (br $l))))
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
