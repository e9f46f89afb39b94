;; refuse_tablegrow.wat: a module that grows a table without a maximum,
;; which the host must refuse to load: a table's elements are host memory
;; that the memory limit does not cover.
;; Rebuild: wat2wasm refuse_tablegrow.wat -o refuse_tablegrow.wasm
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (table $t 1 funcref)
  (data (i32.const 1024) "{\"name\":\"refuse_tablegrow\",\"version\":\"1.0.0\",\"abi\":1}")
  (func (export "ganglion_abi_version") (result i32) (i32.const 1))
  (func (export "ganglion_init") (result i32)
    (drop (call $manifest (i32.const 1024) (i32.const 53)))
    ;; 2^27 elements: a gigabyte of host memory in every instance.
    (drop (table.grow $t (ref.null func) (i32.const 134217728)))
    (i32.const 0))
)
