package badger

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ganglion-dev/ganglion/store"
)

// TestKeyLayout pins the bytes of every kind of key to the table in doc.go.
func TestKeyLayout(t *testing.T) {
	tests := []struct {
		name string
		key  storeKey
		want string
	}{
		{"version", storeKey{kind: kindVersion}, "v"},
		{"meta", storeKey{kind: kindMeta, agent: "support", instance: "t-1"}, "i\x00support\x00t-1"},
		{"fence", storeKey{kind: kindFence, agent: "support", instance: "t-1"}, "f\x00support\x00t-1"},
		{"message", storeKey{kind: kindMessage, agent: "a", instance: "k", seq: 0x0102030405060708},
			"m\x00a\x00k\x00\x01\x02\x03\x04\x05\x06\x07\x08"},
		{"message seq 0", storeKey{kind: kindMessage, agent: "a", instance: "k"}, "m\x00a\x00k\x00\x00\x00\x00\x00\x00\x00\x00\x00"},
		{"state", storeKey{kind: kindState, agent: "a", instance: "k", extension: "memo.v2"}, "s\x00a\x00k\x00memo.v2"},
		{"pending", storeKey{kind: kindPending, id: "q-7"}, "p\x00q-7"},
		{"task", storeKey{kind: kindTask, id: "task_1a"}, "t\x00task_1a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.key.encode()
			if string(got) != tt.want {
				t.Fatalf("encode = %q, want %q", got, tt.want)
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
}

func TestPrefixes(t *testing.T) {
	tests := []struct {
		name string
		got  []byte
		want string
	}{
		{"agent", agentPrefix(kindMessage, "a"), "m\x00a\x00"},
		{"messages", messagePrefix("a", "k"), "m\x00a\x00k\x00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if string(tt.got) != tt.want {
				t.Fatalf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
	// Agent "a" must not see agent "ab", nor instance "k" instance "k2".
	if bytes.HasPrefix(metaKey("ab", "k"), agentPrefix(kindMeta, "a")) {
		t.Error(`agent "a" prefix matches agent "ab"`)
	}
	if bytes.HasPrefix(messageKey("a", "k2", 1), messagePrefix("a", "k")) {
		t.Error(`instance "k" prefix matches instance "k2"`)
	}
}

func TestDecodeKeyErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", "", `malformed key "": empty`},
		{"version trailing", "vx", `malformed key "vx": trailing bytes after version tag`},
		{"unknown kind", "x\x00a\x00k", `malformed key "x\x00a\x00k": unknown kind`},
		{"kind only", "i", `malformed key "i": no separator after kind`},
		{"no agent end", "i\x00a", `malformed key "i\x00a": no separator after agent`},
		{"bad agent", "i\x00a b\x00k", `malformed key "i\x00a b\x00k": store: invalid agent name "a b": character " " at offset 1 not allowed (want [a-zA-Z0-9_.-]{1,64})`},
		{"empty instance", "i\x00a\x00", `malformed key "i\x00a\x00": store: invalid instance key "": empty (want 1 to 256 bytes of UTF-8 without NUL)`},
		{"NUL in instance", "i\x00a\x00k\x00x", `malformed key "i\x00a\x00k\x00x": store: invalid instance key "k\x00x": NUL at offset 1 (want 1 to 256 bytes of UTF-8 without NUL)`},
		{"short seq", "m\x00a\x00k\x00\x01", `malformed key "m\x00a\x00k\x00\x01": no sequence number`},
		{"no state extension", "s\x00a\x00k", `malformed key "s\x00a\x00k": no separator after instance key`},
		{"bad extension", "s\x00a\x00k\x00", `malformed key "s\x00a\x00k\x00": store: invalid extension name "": empty (want [a-zA-Z0-9_.-]{1,64})`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeKey([]byte(tt.in))
			if err == nil {
				t.Fatal("no error")
			}
			if err.Error() != tt.want {
				t.Fatalf("error\n got: %s\nwant: %s", err, tt.want)
			}
			if !errors.Is(err, errBadKey) {
				t.Fatal("error does not match errBadKey")
			}
		})
	}
}

// FuzzKeys checks that every key built from valid names decodes to those
// names, and that decoding any bytes never panics and accepts only keys that
// encode back to the same bytes.
func FuzzKeys(f *testing.F) {
	seeds := []struct {
		agent, instance, extension string
		seq                        uint64
		raw                        string
	}{
		{"a", "k", "e", 0, "v"},
		{"support", "ticket-42", "memo", 7, "i\x00support\x00ticket-42"},
		{"a.b_c-D9", "ключ/with spaces", "ext.v2", 1<<64 - 1, "m\x00a\x00k\x00\x00\x00\x00\x00\x00\x00\x00\x05"},
		{"ab", "k\x00bad", "", 0, "s\x00a\x00k\x00e"},
		{"", "", "a b", 256, "m\x00a\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"},
		{"x", "\xff", "y", 1, "s\x00a\x00k\x00e\x00f"},
	}
	for _, s := range seeds {
		f.Add(s.agent, s.instance, s.extension, s.seq, []byte(s.raw))
	}
	f.Fuzz(func(t *testing.T, agent, instance, extension string, seq uint64, raw []byte) {
		if k, err := decodeKey(raw); err == nil {
			if got := k.encode(); !bytes.Equal(got, raw) {
				t.Fatalf("decode(%q) = %+v, which encodes to %q", raw, k, got)
			}
		}

		if store.ValidateName("agent name", agent) != nil || store.ValidateStoredKey(instance) != nil {
			return
		}
		keys := []storeKey{
			{kind: kindMeta, agent: agent, instance: instance},
			{kind: kindMessage, agent: agent, instance: instance, seq: seq},
			{kind: kindFence, agent: agent, instance: instance},
		}
		if store.ValidateName("extension name", extension) == nil {
			keys = append(keys, storeKey{kind: kindState, agent: agent, instance: instance, extension: extension})
		}
		for _, k := range keys {
			b := k.encode()
			back, err := decodeKey(b)
			if err != nil {
				t.Fatalf("decode(encode(%+v)): %v", k, err)
			}
			if back != k {
				t.Fatalf("decode(encode(%+v)) = %+v", k, back)
			}
			if !bytes.HasPrefix(b, agentPrefix(k.kind, agent)) {
				t.Fatalf("key %q lacks its agent prefix", b)
			}
		}
		if b := keys[1].encode(); !bytes.HasPrefix(b, messagePrefix(agent, instance)) {
			t.Fatalf("message key %q lacks its instance prefix", b)
		}
	})
}
