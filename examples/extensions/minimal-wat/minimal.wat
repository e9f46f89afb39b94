;; minimal.wat: a whole Ganglion extension in WebAssembly text, with no SDK.
;; A turn middleware: it logs "minimal saw a turn" and passes the turn on.
;; Rebuild: wat2wasm minimal.wat -o minimal.wasm
;;
;; What every module needs is marked "Required"; the rest ("hook") makes the
;; middleware. The required parts alone, with the manifest {"abi":1} (9
;; bytes), are the smallest module the host loads: one that does nothing.
(module
  ;; Required: every guest imports ganglion.manifest, which the host's
  ;; metering calls, and declares its manifest with it.
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  ;; hook: register(kind, spec_ptr, spec_len) -> id; kind 1 is a turn middleware.
  (import "ganglion" "register" (func $register (param i32 i32 i32) (result i32)))
  ;; hook: log(level, ptr, len); level 0 is info.
  (import "ganglion" "log" (func $log (param i32 i32 i32) (result i32)))
  ;; hook: next(ctx) runs the rest of the turn: the inner layers, the model.
  (import "ganglion" "next" (func $next (param i32) (result i32)))

  ;; Required: the memory, exported as "memory", where the host reads
  ;; the (ptr, len) byte strings the guest passes.
  (memory (export "memory") 1)
  ;; The manifest, JSON, 61 bytes at 0. Only "abi" is required; "name"
  ;; and "version" are for people; "hooks" lists the kinds registered.
  (data (i32.const 0) "{\"name\":\"minimal\",\"version\":\"1.0.0\",\"abi\":1,\"hooks\":[\"turn\"]}")
  ;; hook: the log line, 18 bytes at 64.
  (data (i32.const 64) "minimal saw a turn")

  ;; Required: the ABI version this guest implements, 1.
  (func (export "ganglion_abi_version") (result i32) (i32.const 1))

  ;; Required: runs once per instance. The manifest comes first; then the
  ;; registrations. 0 is success. A refused manifest needs no check here:
  ;; the host fails the load with the reason.
  (func (export "ganglion_init") (result i32)
    (drop (call $manifest (i32.const 0) (i32.const 61)))
    ;; hook: a turn middleware with an empty spec (priority from the
    ;; config); the host answers its ID, 1, which ganglion_turn receives.
    (drop (call $register (i32.const 1) (i32.const 0) (i32.const 0)))
    (i32.const 0))

  ;; hook: the turn middleware, called with the turn's handle and the ID.
  ;; It returns 0 without setting a result, so the turn's result is the one
  ;; next returned, or next's failure goes on unchanged.
  (func (export "ganglion_turn") (param $ctx i32) (param $id i32) (result i32)
    (drop (call $log (i32.const 0) (i32.const 64) (i32.const 18)))
    (drop (call $next (local.get $ctx)))
    (i32.const 0))
)
