package badger

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	badgerdb "github.com/dgraph-io/badger/v4"
	"github.com/ganglion-dev/ganglion/internal/secret"
)

// TestSecretKeyLayout pins the secret keys to the table in doc.go.
func TestSecretKeyLayout(t *testing.T) {
	tests := []struct {
		name string
		key  storeKey
		want string
	}{
		{"env-var name", storeKey{kind: kindSecret, agent: "support", instance: "t-1", name: "OPENAI_API_KEY"}, "c\x00support\x00t-1\x00OPENAI_API_KEY"},
		{"odd instance key", storeKey{kind: kindSecret, agent: "a", instance: "k/ключ 1", name: "x"}, "c\x00a\x00k/ключ 1\x00x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.key.encode()
			if string(got) != tt.want {
				t.Fatalf("encode = %q, want %q", got, tt.want)
			}
			if !bytes.Equal(got, secretKey(tt.key.agent, tt.key.instance, tt.key.name)) {
				t.Fatal("encode and secretKey differ")
			}
			if !bytes.HasPrefix(got, secretPrefix(tt.key.agent, tt.key.instance)) {
				t.Fatalf("key %q lacks its instance prefix %q", got, secretPrefix(tt.key.agent, tt.key.instance))
			}
			if !bytes.HasPrefix(got, agentPrefix(kindSecret, tt.key.agent)) {
				t.Fatalf("key %q lacks its agent prefix", got)
			}
			back, err := decodeKey(got)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if back != tt.key {
				t.Fatalf("decode = %+v, want %+v", back, tt.key)
			}
		})
	}
	if got := string(secretPrefix("a", "k")); got != "c\x00a\x00k\x00" {
		t.Errorf("secretPrefix = %q", got)
	}
	// Instance "k" must not see instance "k2", nor agent "a" agent "ab".
	if bytes.HasPrefix(secretKey("a", "k2", "K"), secretPrefix("a", "k")) {
		t.Error(`instance "k" prefix matches instance "k2"`)
	}
	if bytes.HasPrefix(secretKey("ab", "k", "K"), secretPrefix("a", "k")) {
		t.Error(`agent "a" prefix matches agent "ab"`)
	}
}

func TestDecodeSecretKeyErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"no name", "c\x00a\x00k", `malformed key "c\x00a\x00k": no separator after instance key`},
		{"empty name", "c\x00a\x00k\x00", `malformed key "c\x00a\x00k\x00": store: invalid secret name "": empty (want [a-zA-Z0-9_.-]{1,64})`},
		{"space in name", "c\x00a\x00k\x00A B", `malformed key "c\x00a\x00k\x00A B": store: invalid secret name "A B": character " " at offset 1 not allowed (want [a-zA-Z0-9_.-]{1,64})`},
		{"NUL in name", "c\x00a\x00k\x00A\x00B", `malformed key "c\x00a\x00k\x00A\x00B": store: invalid secret name "A\x00B": character "\x00" at offset 1 not allowed (want [a-zA-Z0-9_.-]{1,64})`},
		{"empty instance", "c\x00a\x00\x00K", `malformed key "c\x00a\x00\x00K": store: invalid instance key "": empty (want 1 to 256 bytes of UTF-8 without NUL)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeKey([]byte(tt.in))
			if err == nil || err.Error() != tt.want {
				t.Fatalf("error\n got: %v\nwant: %s", err, tt.want)
			}
			if !errors.Is(err, errBadKey) {
				t.Fatal("error does not match errBadKey")
			}
		})
	}
}

// TestBadgerSecretsOnDisk stores a value sealed as the runtime seals it, and
// checks that the database holds the sealed bytes verbatim under the key of
// doc.go, that they survive reopening, and that no file in the data
// directory contains the plaintext. A control value stored as plain state
// shows the file scan finds what is there.
func TestBadgerSecretsOnDisk(t *testing.T) {
	ctx := context.Background()
	const (
		plaintext = "sk-proj-Q8zX4mN2vB7cL1kJ9hG3fD5sA0pO6iUy"
		control   = "ctl-W3eR5tY7uI9oP1aS2dF4gH6jK8lZ0xCv"
		aad       = "support\x00t-1\x00OPENAI_API_KEY"
	)
	k, err := secret.NewKeyring(bytes.Repeat([]byte{9}, secret.KeyLen))
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := k.Seal([]byte(plaintext), aad)
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutSecret(ctx, "support", "t-1", "OPENAI_API_KEY", sealed); err != nil {
		t.Fatal(err)
	}
	if err := s.SetState(ctx, "support", "t-1", "e", []byte(control)); err != nil {
		t.Fatal(err)
	}
	err = backend(s).db.View(func(txn *badgerdb.Txn) error {
		item, err := txn.Get([]byte("c\x00support\x00t-1\x00OPENAI_API_KEY"))
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			if !bytes.Equal(v, sealed) {
				t.Errorf("stored value = %x, want the sealed bytes %x", v, sealed)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, found, err := s.GetSecret(ctx, "support", "t-1", "OPENAI_API_KEY")
	if err != nil || !found {
		t.Fatalf("after reopen: GetSecret = %v, %v", found, err)
	}
	if v, err := k.Open(got, aad); err != nil || string(v) != plaintext {
		t.Fatalf("after reopen: Open = %q, %v", v, err)
	}
	if names, err := s.ListSecrets(ctx, "support", "t-1"); err != nil || len(names) != 1 || names[0] != "OPENAI_API_KEY" {
		t.Fatalf("after reopen: ListSecrets = %q, %v", names, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	var sawControl bool
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(plaintext)) {
			t.Errorf("%s holds the secret's plaintext", filepath.Base(path))
		}
		sawControl = sawControl || bytes.Contains(b, []byte(control))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !sawControl {
		t.Fatal("no file holds the control value: the scan proves nothing")
	}
}
