package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// KeyLen is the length of a key in bytes: AES-256.
const KeyLen = 32

// version is the first byte of every sealed value; see the package
// documentation for the format.
const version byte = 1

// Lengths in the sealed format.
const (
	nonceLen = 12
	tagLen   = 16
	// overhead is how many bytes longer a sealed value is than its plaintext.
	overhead = 1 + nonceLen + tagLen
)

// Keyring seals and opens values with one AES-256-GCM key. It does not keep
// the key itself, only the cipher made from it. Make one with [NewKeyring] or
// [LoadKeyring].
//
// A Keyring is safe for concurrent use.
type Keyring struct {
	aead cipher.AEAD // with random nonces: Seal prepends one, Open reads it
}

// NewKeyring returns a Keyring using key, which must be [KeyLen] bytes long.
// The Keyring does not keep key: the caller may clear it.
func NewKeyring(key []byte) (*Keyring, error) {
	if len(key) != KeyLen {
		return nil, fmt.Errorf("secret: key is %d bytes long, want %d", len(key), KeyLen)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return nil, fmt.Errorf("secret: %w", err)
	}
	return &Keyring{aead: aead}, nil
}

// Seal encrypts plaintext, binding it to aad (where the value will be
// stored), and returns the sealed value in the format of the package
// documentation. It does not change plaintext, and the result does not
// share memory with it.
func (k *Keyring) Seal(plaintext []byte, aad string) ([]byte, error) {
	out := make([]byte, 1, overhead+len(plaintext))
	out[0] = version
	return k.aead.Seal(out, nil, plaintext, additionalData(aad)), nil
}

// Open decrypts a value made by [Keyring.Seal] with the same key and aad.
//
// # Errors
//
// The errors never contain the plaintext or the key:
//
//	secret: sealed value is empty
//	secret: sealed value has unknown format version 7
//	secret: sealed value is 20 bytes long, too short (at least 29)
//	secret: cannot open sealed value: wrong key or tampered data
//
// The last is also what a value sealed under another aad gets.
func (k *Keyring) Open(sealed []byte, aad string) ([]byte, error) {
	switch {
	case len(sealed) == 0:
		return nil, errors.New("secret: sealed value is empty")
	case sealed[0] != version:
		return nil, fmt.Errorf("secret: sealed value has unknown format version %d", sealed[0])
	case len(sealed) < overhead:
		return nil, fmt.Errorf("secret: sealed value is %d bytes long, too short (at least %d)", len(sealed), overhead)
	}
	plaintext, err := k.aead.Open(nil, nil, sealed[1:], additionalData(aad))
	if err != nil {
		return nil, errors.New("secret: cannot open sealed value: wrong key or tampered data")
	}
	return plaintext, nil
}

// additionalData is what GCM authenticates besides the ciphertext: the
// version byte, then aad.
func additionalData(aad string) []byte {
	return append([]byte{version}, aad...)
}

// LoadKeyring returns a Keyring with the key from the environment variable
// named env if it is set and not empty, or else from the key file at path,
// which it creates with a new random key if the file does not exist. The
// package documentation describes the encodings and the file's permissions.
//
// # Errors
//
// No error contains the key or any part of it:
//
//	secret: environment variable GANGLION_SECRET_KEY: not a 32-byte key in base64 or 64 hex digits
//	secret: key file "/home/u/.ganglion/secret.key" has mode 0644, which lets group or others access it: run chmod 600 "/home/u/.ganglion/secret.key"
//	secret: no key: environment variable GANGLION_SECRET_KEY is not set and no key file is given
func LoadKeyring(env, path string) (*Keyring, error) {
	if env != "" {
		if v := os.Getenv(env); v != "" {
			key, err := parseKey(v)
			if err != nil {
				return nil, fmt.Errorf("secret: environment variable %s: %w", env, err)
			}
			defer clear(key)
			return NewKeyring(key)
		}
	}
	if path == "" {
		if env == "" {
			return nil, errors.New("secret: no key: no environment variable and no key file is given")
		}
		return nil, fmt.Errorf("secret: no key: environment variable %s is not set and no key file is given", env)
	}
	key, err := loadKeyFile(path)
	if err != nil {
		return nil, err
	}
	defer clear(key)
	return NewKeyring(key)
}

// parseKey decodes a key written as base64 (standard or URL-safe, padded or
// not) or as 64 hex digits, ignoring surrounding whitespace. Its errors do
// not quote s, nor wrap the decoders' errors, which may quote a character.
func parseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty")
	}
	if len(s) == 2*KeyLen { // no base64 of KeyLen bytes is this long
		key, err := hex.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("%d characters but not all hex digits", 2*KeyLen)
		}
		return key, nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		key, err := enc.DecodeString(s)
		if err != nil {
			continue
		}
		if len(key) != KeyLen {
			clear(key)
			return nil, fmt.Errorf("decodes as base64 to %d bytes, want %d (or %d hex digits)", len(key), KeyLen, 2*KeyLen)
		}
		return key, nil
	}
	return nil, fmt.Errorf("not a %d-byte key in base64 or %d hex digits", KeyLen, 2*KeyLen)
}

// maxKeyFileLen is the longest key file read: a key with generous
// whitespace.
const maxKeyFileLen = 1024

// loadKeyFile reads the key at path, creating it if it does not exist.
func loadKeyFile(path string) ([]byte, error) {
	key, err := readKeyFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	return createKeyFile(path)
}

// readKeyFile reads and decodes the key at path, refusing a file group or
// others may access. Its error matches [fs.ErrNotExist] if there is no file.
func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("secret: read key file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("secret: read key file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("secret: key file %q is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return nil, fmt.Errorf("secret: key file %q has mode %#o, which lets group or others access it: run chmod 600 %q", path, perm, path)
	}
	// A key is a few dozen bytes; reading a little more tells junk apart.
	text, err := io.ReadAll(io.LimitReader(f, maxKeyFileLen+1))
	defer clear(text)
	if err != nil {
		return nil, fmt.Errorf("secret: read key file: %w", err)
	}
	if len(text) > maxKeyFileLen {
		return nil, fmt.Errorf("secret: key file %q is longer than %d bytes: not a key", path, maxKeyFileLen)
	}
	key, err := parseKey(string(text))
	if err != nil {
		return nil, fmt.Errorf("secret: key file %q: %w", path, err)
	}
	return key, nil
}

// createKeyFile writes a new random key to path and returns it. It writes a
// temporary file beside path, syncs it, and links it into place, which fails
// if path has appeared meanwhile: then the key in path, written by another
// process, is the one returned. Where links are not supported, it renames
// the temporary file instead.
func createKeyFile(path string) (key []byte, err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("secret: create key file: %w", err)
	}
	key = make([]byte, KeyLen)
	rand.Read(key) // never fails; see crypto/rand
	text := base64.StdEncoding.AppendEncode(nil, key)
	text = append(text, '\n')
	defer clear(text)

	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*") // mode 0600
	if err != nil {
		return nil, fmt.Errorf("secret: create key file: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the link, path keeps the file
	if err := writeSync(tmp, text); err != nil {
		return nil, fmt.Errorf("secret: create key file %q: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			clear(key)
			return readKeyFile(path) // another process was first
		}
		if err := os.Rename(tmp.Name(), path); err != nil {
			return nil, fmt.Errorf("secret: create key file: %w", err)
		}
	}
	syncDir(dir)
	return key, nil
}

// writeSync writes b to f, syncs and closes f.
func writeSync(f *os.File, b []byte) error {
	_, err := f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir makes a new directory entry in dir durable, where the system
// allows it; it is best effort. Were the entry lost in a crash, the next start
// would make another key, and the values sealed with this one would no
// longer open.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}
