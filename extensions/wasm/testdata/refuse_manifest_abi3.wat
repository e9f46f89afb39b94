;; refuse_manifest_abi3.wat: a module whose manifest says "abi": 3, which the
;; host must refuse to load.
;; Rebuild: wat2wasm refuse_manifest_abi3.wat -o refuse_manifest_abi3.wasm
;;
;; Like guard.wat, its init ignores manifest's result and returns 0.
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 1024) "{\"name\":\"refuse_manifest_abi3\",\"version\":\"1.0.0\",\"abi\":3}")
  (func (export "ganglion_abi_version") (result i32) (i32.const 1))
  (func (export "ganglion_init") (result i32)
    (drop (call $manifest (i32.const 1024) (i32.const 57)))
    (i32.const 0))
)
