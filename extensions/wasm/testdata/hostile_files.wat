;; hostile_files.wat: a guest that tries to read and write files out of
;; the paths its manifest asks (docs/ to read, out/ to write), for the
;; host's tests (files_test.go).
;; Rebuild: wat2wasm hostile_files.wat -o hostile_files.wasm
;;
;; Its turn hook, for an input starting with "escape", reads, lists and
;; writes each path of its list: up with "..", absolute, through symbolic
;; links the test puts in docs/ and out/ that lead out of them. It fails
;; with the results, "read=code list=code write=code" per path, separated
;; by spaces. Any other input goes on to next.
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (import "ganglion" "register" (func $register (param i32 i32 i32) (result i32)))
  (import "ganglion" "field" (func $field (param i32 i32 i32 i32) (result i32)))
  (import "ganglion" "next" (func $next (param i32) (result i32)))
  (import "ganglion" "set_error" (func $set_error (param i32 i32) (result i32)))
  (import "ganglion" "file_read" (func $file_read (param i32 i32 i32 i32 i32) (result i32)))
  (import "ganglion" "file_list" (func $file_list (param i32 i32 i32 i32 i32) (result i32)))
  (import "ganglion" "file_write" (func $file_write (param i32 i32 i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 2)

  ;; Strings are NUL-terminated: memory is zero after each segment.
  (data (i32.const 0) "{\"name\":\"hostile_files\",\"version\":\"1.0.0\",\"abi\":2,\"hooks\":[\"turn\"],\"files\":{\"read\":[\"docs/\"],\"write\":[\"out/\"]}}")
  (data (i32.const 512) "escape")
  (data (i32.const 528) "read=")
  (data (i32.const 544) " list=")
  (data (i32.const 560) " write=")
  (data (i32.const 576) "pwned")
  ;; The paths, 64 bytes apart from 1024; an empty one ends the list.
  (data (i32.const 1024) "../outside/secret.txt")
  (data (i32.const 1088) "docs/../../outside/secret.txt")
  (data (i32.const 1152) "/etc/passwd")
  (data (i32.const 1216) "docs/out-link")
  (data (i32.const 1280) "docs/up-link")
  (data (i32.const 1344) "docs/out-dir/secret.txt")
  (data (i32.const 1408) "out/out-link")
  (data (i32.const 1472) "out/out-dir/pwned.txt")
  (data (i32.const 1536) "docs/../secret.txt")

  (func (export "ganglion_abi_version") (result i32) (i32.const 2))

  (func (export "ganglion_init") (result i32)
    (drop (call $manifest (i32.const 0) (call $len (i32.const 0))))
    (drop (call $register (i32.const 1) (i32.const 0) (i32.const 0)))
    (i32.const 0))

  (func (export "ganglion_turn") (param $ctx i32) (param $id i32) (result i32)
    (local $p i32) (local $n i32)
    (if (i32.eqz (call $starts (local.get $ctx) (i32.const 512)))
      (then (return (call $pass (local.get $ctx)))))
    (local.set $p (i32.const 1024))
    (block $done
      (loop $each
        (local.set $n (call $len (local.get $p)))
        (br_if $done (i32.eqz (local.get $n)))
        (if (i32.ne (local.get $p) (i32.const 1024))
          (then (call $put (i32.const 32))))
        (call $say (i32.const 528))
        (call $num (call $file_read (local.get $ctx) (local.get $p) (local.get $n) (i32.const 32768) (i32.const 4096)))
        (call $say (i32.const 544))
        (call $num (call $file_list (local.get $ctx) (local.get $p) (local.get $n) (i32.const 32768) (i32.const 4096)))
        (call $say (i32.const 560))
        (call $num (call $file_write (local.get $ctx) (local.get $p) (local.get $n) (i32.const 576) (i32.const 5) (i32.const 0)))
        (local.set $p (i32.add (local.get $p) (i32.const 64)))
        (br $each)))
    (drop (call $set_error (i32.const 16384) (i32.sub (global.get $out) (i32.const 16384))))
    (global.set $out (i32.const 16384))
    (i32.const 1))

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

  ;; $pass calls next, and fails if the rest of the chain failed.
  (func $pass (param $ctx i32) (result i32)
    (i32.ne (call $next (local.get $ctx)) (i32.const 0)))

  ;; The report, appended at 16384.
  (global $out (mut i32) (i32.const 16384))

  (func $put (param $b i32)
    (i32.store8 (global.get $out) (local.get $b))
    (global.set $out (i32.add (global.get $out) (i32.const 1))))

  ;; $say appends the NUL-terminated string at $s.
  (func $say (param $s i32)
    (local $i i32) (local $c i32)
    (block $end
      (loop $copy
        (local.set $c (i32.load8_u (i32.add (local.get $s) (local.get $i))))
        (br_if $end (i32.eqz (local.get $c)))
        (call $put (local.get $c))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $copy))))

  ;; $num appends $v in decimal.
  (func $num (param $v i32)
    (local $d i32)
    (if (i32.lt_s (local.get $v) (i32.const 0))
      (then
        (call $put (i32.const 45)) ;; -
        (local.set $v (i32.sub (i32.const 0) (local.get $v)))))
    (local.set $d (i32.const 1))
    (block $top
      (loop $up
        (br_if $top (i32.gt_u (local.get $d) (i32.div_u (local.get $v) (i32.const 10))))
        (local.set $d (i32.mul (local.get $d) (i32.const 10)))
        (br $up)))
    (loop $digit
      (call $put (i32.add (i32.const 48) (i32.div_u (local.get $v) (local.get $d))))
      (local.set $v (i32.rem_u (local.get $v) (local.get $d)))
      (local.set $d (i32.div_u (local.get $d) (i32.const 10)))
      (br_if $digit (local.get $d))))
)
