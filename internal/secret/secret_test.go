package secret_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/ganglion-dev/ganglion/internal/secret"
)

// testKey is a fixed key; otherKey differs from it in one bit.
var (
	testKey  = bytes.Repeat([]byte{0x42}, secret.KeyLen)
	otherKey = append(bytes.Repeat([]byte{0x42}, secret.KeyLen-1), 0x43)
)

func keyring(t testing.TB, key []byte) *secret.Keyring {
	t.Helper()
	k, err := secret.NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

const aad = "agent\x00instance\x00OPENAI_API_KEY"

func TestSealOpenRoundTrip(t *testing.T) {
	k := keyring(t, testKey)
	tests := []struct {
		name      string
		plaintext []byte
		aad       string
	}{
		{"api key", []byte("sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"), aad},
		{"empty value", []byte{}, aad},
		{"binary", []byte{0, 1, 2, 0xff, 0xfe, 0}, aad},
		{"empty aad", []byte("value"), ""},
		{"large", bytes.Repeat([]byte("0123456789abcdef"), 1<<12), aad},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := bytes.Clone(tt.plaintext)
			sealed, err := k.Seal(in, tt.aad)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(in, tt.plaintext) {
				t.Fatal("Seal changed its input")
			}
			if got, want := len(sealed), len(tt.plaintext)+secret.Overhead; got != want {
				t.Fatalf("sealed length = %d, want %d", got, want)
			}
			if sealed[0] != 1 {
				t.Fatalf("version byte = %d, want 1", sealed[0])
			}
			if len(tt.plaintext) >= 4 && bytes.Contains(sealed, tt.plaintext[:4]) {
				t.Fatal("sealed value contains the plaintext")
			}
			again, _ := k.Seal(tt.plaintext, tt.aad)
			if bytes.Equal(again, sealed) {
				t.Fatal("sealing twice gave the same bytes: nonce not random")
			}
			got, err := k.Open(sealed, tt.aad)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.plaintext) {
				t.Fatalf("Open = %q, want %q", got, tt.plaintext)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	k := keyring(t, testKey)
	plaintext := []byte("hunter2-is-my-password")
	sealed, err := k.Seal(plaintext, aad)
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		b := bytes.Clone(sealed)
		b[i] ^= 1
		return b
	}
	const authFailed = "secret: cannot open sealed value: wrong key or tampered data"
	tests := []struct {
		name   string
		k      *secret.Keyring
		sealed []byte
		aad    string
		want   string
	}{
		{"wrong aad: other name", k, sealed, "agent\x00instance\x00GITHUB_TOKEN", authFailed},
		{"wrong aad: other instance", k, sealed, "agent\x00other\x00OPENAI_API_KEY", authFailed},
		{"wrong aad: empty", k, sealed, "", authFailed},
		{"wrong key", keyring(t, otherKey), sealed, aad, authFailed},
		{"tampered nonce", k, flip(1), aad, authFailed},
		{"tampered ciphertext", k, flip(1 + 12 + 3), aad, authFailed},
		{"tampered tag", k, flip(len(sealed) - 1), aad, authFailed},
		{"tampered version", k, flip(0), aad, "secret: sealed value has unknown format version 0"},
		{"unknown version", k, append([]byte{7}, sealed[1:]...), aad, "secret: sealed value has unknown format version 7"},
		{"truncated by one", k, sealed[:len(sealed)-1], aad, authFailed},
		{"truncated below overhead", k, sealed[:20], aad, "secret: sealed value is 20 bytes long, too short (at least 29)"},
		{"version only", k, sealed[:1], aad, "secret: sealed value is 1 bytes long, too short (at least 29)"},
		{"empty", k, nil, aad, "secret: sealed value is empty"},
		{"extended", k, append(bytes.Clone(sealed), 0), aad, authFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.k.Open(tt.sealed, tt.aad)
			if err == nil {
				t.Fatalf("Open succeeded: %q", got)
			}
			if got != nil {
				t.Errorf("Open returned %q with its error", got)
			}
			if err.Error() != tt.want {
				t.Fatalf("error\n got: %s\nwant: %s", err, tt.want)
			}
			if strings.Contains(err.Error(), string(plaintext)) {
				t.Fatal("error contains the plaintext")
			}
		})
	}
}

func TestNewKeyringLength(t *testing.T) {
	for _, n := range []int{0, 16, 31, 33, 64} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			key := bytes.Repeat([]byte{'k'}, n)
			_, err := secret.NewKeyring(key)
			want := fmt.Sprintf("secret: key is %d bytes long, want 32", n)
			if err == nil || err.Error() != want {
				t.Fatalf("err = %v, want %q", err, want)
			}
		})
	}
}

// encodings are the ways a user may write testKey.
var encodings = []struct {
	name, text string
}{
	{"base64 std", base64.StdEncoding.EncodeToString(testKey)},
	{"base64 raw std", base64.RawStdEncoding.EncodeToString(testKey)},
	{"base64 url", base64.URLEncoding.EncodeToString(testKey)},
	{"base64 raw url", base64.RawURLEncoding.EncodeToString(testKey)},
	{"hex lower", hex.EncodeToString(testKey)},
	{"hex upper", strings.ToUpper(hex.EncodeToString(testKey))},
	{"whitespace around", " \t" + base64.StdEncoding.EncodeToString(testKey) + "\r\n"},
	{"trailing newline hex", hex.EncodeToString(testKey) + "\n"},
}

// urlKey is a key whose base64 needs the characters that differ between the
// standard and URL alphabets.
var urlKey = bytes.Repeat([]byte{0xfb, 0xff}, secret.KeyLen/2)

// wantSameKey checks that k opens what a keyring of key seals, and the
// reverse.
func wantSameKey(t *testing.T, k *secret.Keyring, key []byte) {
	t.Helper()
	ref := keyring(t, key)
	sealed, _ := ref.Seal([]byte("v"), aad)
	if _, err := k.Open(sealed, aad); err != nil {
		t.Fatalf("keyring does not hold the expected key: %v", err)
	}
	sealed, _ = k.Seal([]byte("v"), aad)
	if _, err := ref.Open(sealed, aad); err != nil {
		t.Fatalf("keyring does not hold the expected key: %v", err)
	}
}

// envName is the variable the tests set; not the runtime's, so that a
// developer's real key cannot interfere.
const envName = "GANGLION_TEST_SECRET_KEY"

func TestLoadKeyringFromEnv(t *testing.T) {
	noFile := filepath.Join(t.TempDir(), "never", "key")
	tests := []struct {
		name, text string
		key        []byte
	}{
		{"url alphabet", base64.URLEncoding.EncodeToString(urlKey), urlKey},
		{"raw url alphabet", base64.RawURLEncoding.EncodeToString(urlKey), urlKey},
		{"std alphabet", base64.StdEncoding.EncodeToString(urlKey), urlKey},
	}
	for _, e := range encodings {
		tests = append(tests, struct {
			name, text string
			key        []byte
		}{e.name, e.text, testKey})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(envName, tt.text)
			k, err := secret.LoadKeyring(envName, noFile)
			if err != nil {
				t.Fatal(err)
			}
			wantSameKey(t, k, tt.key)
			// The variable wins: the key file is not even created.
			if _, err := os.Stat(filepath.Dir(noFile)); !os.IsNotExist(err) {
				t.Fatalf("key file directory touched: %v", err)
			}
		})
	}
}

func TestLoadKeyringBadEnv(t *testing.T) {
	const prefix = "secret: environment variable " + envName + ": "
	tests := []struct {
		name, value, want string
	}{
		{"not base64", "my secret password!", "not a 32-byte key in base64 or 64 hex digits"},
		{"words", "my-secret-password-here", "decodes as base64 to 17 bytes, want 32 (or 64 hex digits)"},
		{"short base64", base64.StdEncoding.EncodeToString([]byte("sixteen byte key")), "decodes as base64 to 16 bytes, want 32 (or 64 hex digits)"},
		{"long base64", base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("k"), 40)), "decodes as base64 to 40 bytes, want 32 (or 64 hex digits)"},
		{"hex with a non-hex digit", strings.Repeat("ab", 31) + "zq", "64 characters but not all hex digits"},
		{"63 hex digits", strings.Repeat("a", 63), "decodes as base64 to 47 bytes, want 32 (or 64 hex digits)"},
		{"whitespace only", " \n\t", "empty"},
		{"inner space", base64.StdEncoding.EncodeToString(testKey)[:20] + " " + base64.StdEncoding.EncodeToString(testKey)[20:], "not a 32-byte key in base64 or 64 hex digits"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(envName, tt.value)
			k, err := secret.LoadKeyring(envName, filepath.Join(t.TempDir(), "key"))
			if err == nil {
				t.Fatalf("loaded %v", k)
			}
			if err.Error() != prefix+tt.want {
				t.Fatalf("error\n got: %s\nwant: %s", err, prefix+tt.want)
			}
			if v := strings.TrimSpace(tt.value); v != "" && strings.Contains(err.Error(), v[:min(6, len(v))]) {
				t.Fatal("error shows the value")
			}
		})
	}
}

func TestLoadKeyringCreatesFile(t *testing.T) {
	t.Setenv(envName, "") // set but empty: the file is used
	dir := filepath.Join(t.TempDir(), "config", "ganglion")
	path := filepath.Join(dir, "secret.key")

	first, err := secret.LoadKeyring(envName, path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Errorf("key file mode = %#o, want 0600", perm)
		}
		di, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if perm := di.Mode().Perm(); perm != 0o700 {
			t.Errorf("key directory mode = %#o, want 0700", perm)
		}
	}
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(text)))
	if err != nil || len(key) != secret.KeyLen {
		t.Fatalf("key file holds %q: want 32 bytes in base64 (%v)", text, err)
	}
	wantSameKey(t, first, key)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the key file: %v", len(entries), entries)
	}

	// The second load reuses the key: it opens what the first sealed.
	sealed, err := first.Seal([]byte("sk-123456"), aad)
	if err != nil {
		t.Fatal(err)
	}
	second, err := secret.LoadKeyring("", path)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := second.Open(sealed, aad); err != nil || string(got) != "sk-123456" {
		t.Fatalf("second keyring: Open = %q, %v", got, err)
	}
}

func TestLoadKeyringFileEncodings(t *testing.T) {
	for _, e := range encodings {
		t.Run(e.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "key")
			if err := os.WriteFile(path, []byte(e.text), 0o600); err != nil {
				t.Fatal(err)
			}
			k, err := secret.LoadKeyring("", path)
			if err != nil {
				t.Fatal(err)
			}
			wantSameKey(t, k, testKey)
		})
	}
}

func TestLoadKeyringFileErrors(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix permissions")
	}
	good := base64.StdEncoding.EncodeToString(testKey)
	tests := []struct {
		name    string
		content string
		perm    fs.FileMode
		want    string // %[1]q is the path
	}{
		{"group readable", good, 0o640, `secret: key file %[1]q has mode 0640, which lets group or others access it: run chmod 600 %[1]q`},
		{"world readable", good, 0o604, `secret: key file %[1]q has mode 0604, which lets group or others access it: run chmod 600 %[1]q`},
		{"group writable", good, 0o620, `secret: key file %[1]q has mode 0620, which lets group or others access it: run chmod 600 %[1]q`},
		{"malformed", "password123", 0o600, `secret: key file %[1]q: decodes as base64 to 8 bytes, want 32 (or 64 hex digits)`},
		{"not base64", "pass word!", 0o600, `secret: key file %[1]q: not a 32-byte key in base64 or 64 hex digits`},
		{"empty", "", 0o600, `secret: key file %[1]q: empty`},
		{"huge", strings.Repeat("a", 5000), 0o600, `secret: key file %[1]q is longer than 1024 bytes: not a key`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "key")
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tt.perm); err != nil {
				t.Fatal(err)
			}
			_, err := secret.LoadKeyring("", path)
			want := fmt.Sprintf(tt.want, path)
			if err == nil || err.Error() != want {
				t.Fatalf("error\n got: %v\nwant: %s", err, want)
			}
			if tt.content != "" && strings.Contains(err.Error(), tt.content[:6]) {
				t.Fatal("error shows the file's content")
			}
			// The refused file is left as it was.
			if b, _ := os.ReadFile(path); string(b) != tt.content {
				t.Fatal("key file changed")
			}
		})
	}
}

func TestLoadKeyringNoSource(t *testing.T) {
	t.Setenv(envName, "")
	tests := []struct {
		name, env, want string
	}{
		{"env named", envName, "secret: no key: environment variable " + envName + " is not set and no key file is given"},
		{"nothing named", "", "secret: no key: no environment variable and no key file is given"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := secret.LoadKeyring(tt.env, "")
			if err == nil || err.Error() != tt.want {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestLoadKeyringDirectoryAsFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := secret.LoadKeyring("", dir)
	want := fmt.Sprintf("secret: key file %q is not a regular file", dir)
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

// TestLoadKeyringConcurrentCreate: processes starting at once, all finding
// no key file, must agree on one key.
func TestLoadKeyringConcurrentCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "key")
	const n = 16
	keyrings := make([]*secret.Keyring, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			k, err := secret.LoadKeyring("", path)
			if err != nil {
				t.Error(err)
			}
			keyrings[i] = k
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	sealed, _ := keyrings[0].Seal([]byte("shared"), aad)
	for i, k := range keyrings {
		if _, err := k.Open(sealed, aad); err != nil {
			t.Errorf("keyring %d has another key: %v", i, err)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the key file", len(entries))
	}
}

func TestKeyringConcurrentUse(t *testing.T) {
	k := keyring(t, testKey)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				v := []byte(fmt.Sprintf("value-%d-%d", i, j))
				sealed, err := k.Seal(v, aad)
				if err != nil {
					t.Error(err)
					return
				}
				got, err := k.Open(sealed, aad)
				if err != nil || !bytes.Equal(got, v) {
					t.Errorf("Open = %q, %v", got, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// FuzzOpen: Open never panics, and opens only what Seal made.
func FuzzOpen(f *testing.F) {
	k := keyring(f, testKey)
	sealed, err := k.Seal([]byte("sk-live-0123456789"), aad)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sealed, aad)
	f.Add(sealed, "other")
	f.Add([]byte{}, "")
	f.Add([]byte{1}, aad)
	f.Add([]byte{2, 0, 0}, aad)
	f.Add(bytes.Repeat([]byte{1}, secret.Overhead), aad)
	f.Add(sealed[:secret.Overhead-1], aad)
	f.Add(append([]byte{0}, sealed[1:]...), aad)
	f.Fuzz(func(t *testing.T, b []byte, aad string) {
		in := bytes.Clone(b)
		got, err := k.Open(b, aad)
		if !bytes.Equal(in, b) {
			t.Fatal("Open changed its input")
		}
		if err != nil {
			if got != nil {
				t.Fatalf("Open returned %q with error %v", got, err)
			}
			return
		}
		// It opened: sealing that again must round-trip under the same aad.
		again, err := k.Seal(got, aad)
		if err != nil {
			t.Fatal(err)
		}
		back, err := k.Open(again, aad)
		if err != nil || !bytes.Equal(back, got) {
			t.Fatalf("round trip of opened value: %q, %v", back, err)
		}
	})
}
