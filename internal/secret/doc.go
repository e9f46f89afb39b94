// Package secret keeps the secret values a human hands a paused agent (API
// keys, passwords, tokens) out of plain sight: a [Keyring] seals each value
// with AES-256-GCM before the store writes it, so the database files never
// hold plaintext, and a [Redactor] masks the values, and their common
// encodings, in text the runtime is about to log, show or store (its
// documentation says what it catches and what it cannot).
//
// # Sealed format
//
// A sealed value is
//
//	version (1 byte, 1) | nonce (12 random bytes) | AES-256-GCM ciphertext and 16-byte tag
//
// 29 bytes longer than its plaintext. The GCM additional data is the
// version byte followed by the aad string given to [Keyring.Seal]. The
// runtime passes where the value is stored (say "agent\x00instance\x00NAME"),
// so a sealed value copied under another name or instance fails to open,
// exactly as a tampered one does. With random nonces, one key must not seal
// more than 2^32 values.
//
// # Key sources
//
// [LoadKeyring] takes the 32-byte key from, in order:
//
//  1. the environment variable it is given (the runtime passes
//     GANGLION_SECRET_KEY), if set and not empty;
//  2. otherwise the key file at the path it is given, created with a fresh
//     random key if it does not exist.
//
// Either holds the key as standard or URL-safe base64, padded or not, or as
// 64 hex digits; surrounding whitespace is ignored. No error ever shows the
// key or any part of it.
//
// # File permissions
//
// A new key file is written with mode 0600, in a directory created with mode
// 0700 if missing, through a temporary file that is synced and then linked
// (or renamed) into place, so a crash leaves either no key file or a whole
// one, and two processes creating the file at once end up with the same key.
// Like ssh with a private key, LoadKeyring refuses an existing key file that
// group or others may access (mode & 0o077 != 0); the error says to run
// chmod 600 on it. Windows has no such mode bits, and there the check is
// skipped.
//
// # Concurrency
//
// A [Keyring] and a [Redactor] are immutable once made, and safe for
// concurrent use.
package secret
