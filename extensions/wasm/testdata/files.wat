;; files.wat: a guest that reads, lists and writes workspace files as its
;; input says, for the host's tests of file_read, file_list and file_write
;; (files_test.go).
;; Rebuild: wat2wasm files.wat -o files.wasm
;;
;; Its manifest (ABI version 2) asks to read CODEOWNERS and docs/ and to
;; write out/ and notes.txt. Its turn hook takes an input
;;
;;   read PATH | peek PATH | list PATH | write PATH\nDATA | append PATH\nDATA
;;
;; makes the call (peek reads into a 4-byte buffer), and fails with the
;; report "op=result", followed by ": last_error" for a failure or ": " and
;; what was read for a read or a list. Any other input goes on to next.
(module
  (import "ganglion" "manifest" (func $manifest (param i32 i32) (result i32)))
  (import "ganglion" "register" (func $register (param i32 i32 i32) (result i32)))
  (import "ganglion" "field" (func $field (param i32 i32 i32 i32) (result i32)))
  (import "ganglion" "next" (func $next (param i32) (result i32)))
  (import "ganglion" "set_error" (func $set_error (param i32 i32) (result i32)))
  (import "ganglion" "last_error" (func $last_error (param i32 i32) (result i32)))
  (import "ganglion" "file_read" (func $file_read (param i32 i32 i32 i32 i32) (result i32)))
  (import "ganglion" "file_list" (func $file_list (param i32 i32 i32 i32 i32) (result i32)))
  (import "ganglion" "file_write" (func $file_write (param i32 i32 i32 i32 i32 i32) (result i32)))
  (memory (export "memory") 4)

  ;; Strings are NUL-terminated: memory is zero after each segment.
  (data (i32.const 0) "{\"name\":\"files\",\"version\":\"1.0.0\",\"abi\":2,\"hooks\":[\"turn\"],\"files\":{\"read\":[\"CODEOWNERS\",\"docs/\"],\"write\":[\"out/\",\"notes.txt\"]}}")
  (data (i32.const 1024) "read")
  (data (i32.const 1040) "peek")
  (data (i32.const 1056) "list")
  (data (i32.const 1072) "write")
  (data (i32.const 1088) "append")

  ;; The input text is at 8192 ($n bytes); the report is built at 16384;
  ;; what is read goes to 65536 (64 KiB).
  (global $n (mut i32) (i32.const 0))

  (func (export "ganglion_abi_version") (result i32) (i32.const 2))

  (func (export "ganglion_init") (result i32)
    (drop (call $manifest (i32.const 0) (call $len (i32.const 0))))
    (drop (call $register (i32.const 1) (i32.const 0) (i32.const 0)))
    (i32.const 0))

  (func (export "ganglion_turn") (param $ctx i32) (param $id i32) (result i32)
    (local $p i32) (local $e i32)
    (global.set $n (call $field (local.get $ctx) (i32.const 5) (i32.const 8192) (i32.const 4096)))
    (if (i32.or (i32.lt_s (global.get $n) (i32.const 0)) (i32.gt_s (global.get $n) (i32.const 4096)))
      (then (return (call $pass (local.get $ctx)))))
    ;; The path starts after the op and a space, and ends at "\n" or the end.
    (if (call $op (i32.const 1024)) (then
      (local.set $p (i32.const 8197))
      (call $report (i32.const 1024)
        (call $file_read (local.get $ctx) (local.get $p) (i32.sub (call $eol (local.get $p)) (local.get $p)) (i32.const 65536) (i32.const 65536))
        (i32.const 65536))
      (return (call $fail_report))))
    (if (call $op (i32.const 1040)) (then
      (local.set $p (i32.const 8197))
      (call $report (i32.const 1040)
        (call $file_read (local.get $ctx) (local.get $p) (i32.sub (call $eol (local.get $p)) (local.get $p)) (i32.const 65536) (i32.const 4))
        (i32.const 0))
      (return (call $fail_report))))
    (if (call $op (i32.const 1056)) (then
      (local.set $p (i32.const 8197))
      (call $report (i32.const 1056)
        (call $file_list (local.get $ctx) (local.get $p) (i32.sub (call $eol (local.get $p)) (local.get $p)) (i32.const 65536) (i32.const 65536))
        (i32.const 65536))
      (return (call $fail_report))))
    (if (call $op (i32.const 1072)) (then
      (local.set $p (i32.const 8198))
      (local.set $e (call $eol (local.get $p)))
      (call $report (i32.const 1072)
        (call $write (local.get $ctx) (local.get $p) (local.get $e) (i32.const 0))
        (i32.const 0))
      (return (call $fail_report))))
    (if (call $op (i32.const 1088)) (then
      (local.set $p (i32.const 8199))
      (local.set $e (call $eol (local.get $p)))
      (call $report (i32.const 1088)
        (call $write (local.get $ctx) (local.get $p) (local.get $e) (i32.const 1))
        (i32.const 0))
      (return (call $fail_report))))
    (call $pass (local.get $ctx)))

  ;; $write writes what follows the "\n" at $e (nothing if there is none) to
  ;; the path from $p to $e.
  (func $write (param $ctx i32) (param $p i32) (param $e i32) (param $mode i32) (result i32)
    (local $d i32) (local $end i32)
    (local.set $end (i32.add (i32.const 8192) (global.get $n)))
    (local.set $d (local.get $end))
    (if (i32.lt_u (local.get $e) (local.get $end))
      (then (local.set $d (i32.add (local.get $e) (i32.const 1)))))
    (call $file_write (local.get $ctx) (local.get $p) (i32.sub (local.get $e) (local.get $p))
      (local.get $d) (i32.sub (local.get $end) (local.get $d)) (local.get $mode)))

  ;; $op reports whether the input starts with the NUL-terminated op at $s
  ;; and a space.
  (func $op (param $s i32) (result i32)
    (local $k i32) (local $i i32)
    (local.set $k (call $len (local.get $s)))
    (if (i32.le_s (global.get $n) (local.get $k))
      (then (return (i32.const 0))))
    (block $end
      (loop $cmp
        (br_if $end (i32.ge_u (local.get $i) (local.get $k)))
        (if (i32.ne (i32.load8_u (i32.add (i32.const 8192) (local.get $i)))
                    (i32.load8_u (i32.add (local.get $s) (local.get $i))))
          (then (return (i32.const 0))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $cmp)))
    (i32.eq (i32.load8_u (i32.add (i32.const 8192) (local.get $k))) (i32.const 32)))

  ;; $eol is the address of the first "\n" of the input at or after $p, or
  ;; of its end.
  (func $eol (param $p i32) (result i32)
    (local $end i32)
    (local.set $end (i32.add (i32.const 8192) (global.get $n)))
    (block $out
      (loop $scan
        (br_if $out (i32.ge_u (local.get $p) (local.get $end)))
        (br_if $out (i32.eq (i32.load8_u (local.get $p)) (i32.const 10)))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $scan)))
    (local.get $p))

  ;; $len is the length of the NUL-terminated string at $p.
  (func $len (param $p i32) (result i32)
    (local $n i32)
    (block $end
      (loop $scan
        (br_if $end (i32.eqz (i32.load8_u (i32.add (local.get $p) (local.get $n)))))
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (br $scan)))
    (local.get $n))

  ;; $pass calls next; if the rest of the chain failed, it fails with the
  ;; host's message for it.
  (func $pass (param $ctx i32) (result i32)
    (local $n i32)
    (if (i32.eqz (call $next (local.get $ctx)))
      (then (return (i32.const 0))))
    (local.set $n (call $last_error (i32.const 12288) (i32.const 4096)))
    (if (i32.gt_u (local.get $n) (i32.const 4096))
      (then (local.set $n (i32.const 0))))
    (drop (call $set_error (i32.const 12288) (local.get $n)))
    (i32.const 1))

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

  ;; $report appends "name=code", then ": " and the last error if code is
  ;; negative, or ": " and the code bytes at $buf if $buf is not 0 and they
  ;; fit in 64 KiB.
  (func $report (param $name i32) (param $code i32) (param $buf i32)
    (local $n i32)
    (call $say (local.get $name))
    (call $put (i32.const 61)) ;; =
    (call $num (local.get $code))
    (if (i32.lt_s (local.get $code) (i32.const 0))
      (then
        (call $put (i32.const 58)) ;; :
        (call $put (i32.const 32))
        (local.set $n (call $last_error (global.get $out) (i32.const 1024)))
        (if (i32.le_u (local.get $n) (i32.const 1024))
          (then (global.set $out (i32.add (global.get $out) (local.get $n)))))
        (return)))
    (if (i32.and (i32.ne (local.get $buf) (i32.const 0)) (i32.le_u (local.get $code) (i32.const 65536)))
      (then
        (call $put (i32.const 58)) ;; :
        (call $put (i32.const 32))
        (memory.copy (global.get $out) (local.get $buf) (local.get $code))
        (global.set $out (i32.add (global.get $out) (local.get $code))))))

  ;; $fail_report fails the hook with the report as its message.
  (func $fail_report (result i32)
    (drop (call $set_error (i32.const 16384) (i32.sub (global.get $out) (i32.const 16384))))
    (global.set $out (i32.const 16384))
    (i32.const 1))
)
