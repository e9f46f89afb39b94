;; refuse_startlog.wat: a module whose start function calls imports, which
;; must each answer PHASE (sdk/ABI.md), not crash the host.
;; Rebuild: wat2wasm refuse_startlog.wat -o refuse_startlog.wasm
;;
;; The start function calls log, set_error, last_error, field (CONFIG, ctx
;; 0), register and manifest, and keeps their results at 2048. Its init
;; then fails with "start: every import answered PHASE" if they all did,
;; and with "start: an import did not answer PHASE" otherwise, so that the
;; refusal of the load shows which.
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (import "ganglion" "register" (func $register (param i32 i32 i32) (result i32)))
  (import "ganglion" "field" (func $field (param i32 i32 i32 i32) (result i32)))
  (import "ganglion" "log" (func $log (param i32 i32 i32) (result i32)))
  (import "ganglion" "set_error" (func $set_error (param i32 i32) (result i32)))
  (import "ganglion" "last_error" (func $last_error (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 1024) "hello from start")
  (data (i32.const 1100) "start: every import answered PHASE")
  (data (i32.const 1200) "start: an import did not answer PHASE")

  (func $start
    (i32.store (i32.const 2048) (call $log (i32.const 0) (i32.const 1024) (i32.const 16)))
    (i32.store (i32.const 2052) (call $set_error (i32.const 1024) (i32.const 16)))
    (i32.store (i32.const 2056) (call $last_error (i32.const 4096) (i32.const 256)))
    (i32.store (i32.const 2060) (call $field (i32.const 0) (i32.const 14) (i32.const 4096) (i32.const 256)))
    (i32.store (i32.const 2064) (call $register (i32.const 1) (i32.const 0) (i32.const 0)))
    (i32.store (i32.const 2068) (call $manifest (i32.const 1024) (i32.const 16))))
  (start $start)

  (func (export "ganglion_abi_version") (result i32) (i32.const 1))
  (func (export "ganglion_init") (result i32)
    (local $p i32) (local $ok i32)
    (local.set $p (i32.const 2048))
    (local.set $ok (i32.const 1))
    (block $end
      (loop $each
        (br_if $end (i32.ge_u (local.get $p) (i32.const 2072)))
        (if (i32.ne (i32.load (local.get $p)) (i32.const -8))
          (then (local.set $ok (i32.const 0))))
        (local.set $p (i32.add (local.get $p) (i32.const 4)))
        (br $each)))
    (if (local.get $ok)
      (then (drop (call $set_error (i32.const 1100) (i32.const 34))))
      (else (drop (call $set_error (i32.const 1200) (i32.const 37)))))
    (i32.const 1))
)
