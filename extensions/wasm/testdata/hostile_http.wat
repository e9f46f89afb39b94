;; hostile_http.wat: a guest that sends whatever request its turn's input
;; names, for the tests of the http_request import: hostile_test.go sends
;; it to a host it was not granted and through a redirect out of its grant
;; (each refused, failing only that turn), and bench_test.go to a loopback
;; server, granted. Its manifest asks for http://granted.example only.
;; Rebuild: wat2wasm hostile_http.wat -o hostile_http.wasm
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (import "ganglion" "register" (func $register (param i32 i32 i32) (result i32)))
  (import "ganglion" "field" (func $field (param i32 i32 i32 i32) (result i32)))
  (import "ganglion" "next" (func $next (param i32) (result i32)))
  (import "ganglion" "http_request" (func $http (param i32 i32 i32 i32 i32) (result i32)))
  (import "ganglion" "set_error" (func $set_error (param i32 i32) (result i32)))
  (import "ganglion" "last_error" (func $last_error (param i32 i32) (result i32)))
  ;; 0: the manifest; 4096: the request (16 KiB); 20480: an error
  ;; message (4 KiB); 65536: the answer (64 KiB).
  (memory (export "memory") 2)
  (data (i32.const 0) "{\"name\":\"hostile_http\",\"version\":\"1.0.0\",\"abi\":2,\"hooks\":[\"turn\"],\"http\":[\"http://granted.example\"]}")
  (func (export "ganglion_abi_version") (result i32) (i32.const 2))
  (func (export "ganglion_init") (result i32)
    (drop (call $manifest (i32.const 0) (i32.const 100)))
    (drop (call $register (i32.const 1) (i32.const 0) (i32.const 0)))
    (i32.const 0))
  ;; The turn's input text (field 5) is the request. A refusal fails the
  ;; hook with the host's message; an answer lets the turn go on.
  (func (export "ganglion_turn") (param $ctx i32) (param $id i32) (result i32)
    (local $n i32)
    (local.set $n (call $field (local.get $ctx) (i32.const 5) (i32.const 4096) (i32.const 16384)))
    (if (i32.lt_s (call $http (local.get $ctx) (i32.const 4096) (local.get $n) (i32.const 65536) (i32.const 65536)) (i32.const 0))
      (then
        (local.set $n (call $last_error (i32.const 20480) (i32.const 4096)))
        (drop (call $set_error (i32.const 20480) (local.get $n)))
        (return (i32.const 1))))
    (drop (call $next (local.get $ctx)))
    (i32.const 0))
)
