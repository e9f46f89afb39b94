;; stdio.wat: a turn middleware that writes a line to stdout and one to
;; stderr (the host logs them), and says whether its clock is the real one
;; (a wall clock past 2024) or the fake one the host gives by default
;; (wazero's, which starts at 2022).
;; Rebuild: wat2wasm stdio.wat -o stdio.wasm
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (import "ganglion" "register" (func $register (param i32 i32 i32) (result i32)))
  (import "ganglion" "next" (func $next (param i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "clock_time_get" (func $clock (param i32 i64 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 1024) "{\"name\":\"stdio\",\"abi\":1,\"hooks\":[\"turn\"]}")
  (data (i32.const 2048) "guest says hi\n")
  (data (i32.const 2080) "guest warns\n")
  (data (i32.const 2112) "clock: real\n")
  (data (i32.const 2144) "clock: fake\n")

  (func (export "ganglion_abi_version") (result i32) (i32.const 1))
  (func (export "ganglion_init") (result i32)
    (drop (call $manifest (i32.const 1024) (i32.const 41)))
    (drop (call $register (i32.const 1) (i32.const 0) (i32.const 0)))
    (i32.const 0))
  ;; write(fd, ptr, len) through an iovec at 4000
  (func $write (param $fd i32) (param $ptr i32) (param $len i32)
    (i32.store (i32.const 4000) (local.get $ptr))
    (i32.store (i32.const 4004) (local.get $len))
    (drop (call $fd_write (local.get $fd) (i32.const 4000) (i32.const 1) (i32.const 4008))))
  (func (export "ganglion_turn") (param $ctx i32) (param $id i32) (result i32)
    (call $write (i32.const 1) (i32.const 2048) (i32.const 14))
    (call $write (i32.const 2) (i32.const 2080) (i32.const 12))
    (drop (call $clock (i32.const 0) (i64.const 1) (i32.const 4016)))
    ;; 2024-01-01 is 1704067200 s = 1704067200000000000 ns
    (if (i64.gt_u (i64.load (i32.const 4016)) (i64.const 1704067200000000000))
      (then (call $write (i32.const 1) (i32.const 2112) (i32.const 12)))
      (else (call $write (i32.const 1) (i32.const 2144) (i32.const 12))))
    (call $next (local.get $ctx)))
)
