;; refuse_fuel.wat: an invalid module that writes global 0 without declaring
;; any global, which the host must refuse to load.
;; Rebuild: wat2wasm --no-check refuse_fuel.wat -o refuse_fuel.wasm
;;
;; wat2wasm checks a module unless told not to; wasm-validate rejects this
;; one. Once metered, global 0 would be the host's fuel counter if the
;; host did not validate first: the init refills it on every iteration of
;; a loop long enough to overrun its deadline many times (an endless one
;; would hang the test of an unfixed host).
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (memory (export "memory") 1)
  (func (export "ganglion_abi_version") (result i32) (i32.const 1))
  (func (export "ganglion_init") (result i32)
    (local $n i32)
    (local.set $n (i32.const 100000000))
    (loop $spin
      (global.set 0 (i32.const 10000))
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (br_if $spin (local.get $n)))
    (i32.const 1))
)
