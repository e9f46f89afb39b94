;; refuse_manifest_abi3_checked.wat: a module whose manifest says "abi": 3,
;; which the host must refuse to load.
;; Rebuild: wat2wasm refuse_manifest_abi3_checked.wat -o refuse_manifest_abi3_checked.wasm
;;
;; Unlike refuse_manifest_abi3.wat, its init checks manifest's result and
;; fails with the host's message (last_error), as a guest should.
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (import "ganglion" "set_error" (func $set_error (param i32 i32) (result i32)))
  (import "ganglion" "last_error" (func $last_error (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 1024) "{\"name\":\"refuse_manifest_abi3_checked\",\"version\":\"1.0.0\",\"abi\":3}")
  (func (export "ganglion_abi_version") (result i32) (i32.const 1))
  (func (export "ganglion_init") (result i32)
    (local $n i32)
    (if (i32.lt_s (call $manifest (i32.const 1024) (i32.const 65)) (i32.const 0))
      (then
        (local.set $n (call $last_error (i32.const 4096) (i32.const 1024)))
        (drop (call $set_error (i32.const 4096) (local.get $n)))
        (return (i32.const 1))))
    (i32.const 0))
)
