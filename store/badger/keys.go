package badger

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ganglion-dev/ganglion/store"
)

// This file encodes and decodes the keys of [Open]'s store. The layout is
// documented in doc.go; keep the two in step.

// The first byte of every key says what the key holds.
const (
	kindVersion byte = 'v' // the schema version
	kindMeta    byte = 'i' // an instance's store.Meta
	kindMessage byte = 'm' // one store.Record
	kindState   byte = 's' // one extension's state for an instance
	kindPending byte = 'p' // one pending item, by ID
	kindSecret  byte = 'c' // one sealed secret of an instance
	kindTask    byte = 't' // one delegation task, by ID
	kindFence   byte = 'f' // an instance's latest fence
)

// sep separates the parts of a key. Names cannot contain it.
const sep = 0

// seqLen is the length of an encoded sequence number.
const seqLen = 8

// versionKey holds the schema version.
var versionKey = []byte{kindVersion}

// storeKey is a decoded key. Which fields are set depends on kind.
type storeKey struct {
	kind      byte
	agent     string
	instance  string
	seq       uint64 // kindMessage only
	extension string // kindState only
	name      string // kindSecret only
	id        string // kindPending and kindTask only (no agent or instance in the key)
}

// encode returns the key's bytes. The names must be valid.
func (k storeKey) encode() []byte {
	switch k.kind {
	case kindVersion:
		return bytes.Clone(versionKey)
	case kindMeta:
		return metaKey(k.agent, k.instance)
	case kindFence:
		return fenceKey(k.agent, k.instance)
	case kindMessage:
		return messageKey(k.agent, k.instance, k.seq)
	case kindState:
		return stateKey(k.agent, k.instance, k.extension)
	case kindPending:
		return pendingKey(k.id)
	case kindSecret:
		return secretKey(k.agent, k.instance, k.name)
	case kindTask:
		return taskKey(k.id)
	}
	panic(fmt.Sprintf("store: encode key of unknown kind %q", k.kind))
}

// agentPrefix is the prefix of the keys of kind that belong to agent.
func agentPrefix(kind byte, agent string) []byte {
	b := make([]byte, 0, 3+len(agent))
	return append(append(append(b, kind, sep), agent...), sep)
}

// instancePrefix is the prefix of the keys of kind that belong to one
// instance. For kindMeta it is the whole key.
func instancePrefix(kind byte, agent, instance string, extra int) []byte {
	b := make([]byte, 0, 4+len(agent)+len(instance)+extra)
	b = append(append(append(b, kind, sep), agent...), sep)
	return append(b, instance...)
}

// metaKey is i\x00<agent>\x00<instance>.
func metaKey(agent, instance string) []byte {
	return instancePrefix(kindMeta, agent, instance, 0)
}

// fenceKey is f\x00<agent>\x00<instance>.
func fenceKey(agent, instance string) []byte {
	return instancePrefix(kindFence, agent, instance, 0)
}

// messagePrefix is m\x00<agent>\x00<instance>\x00, the prefix of the
// instance's message keys.
func messagePrefix(agent, instance string) []byte {
	return append(instancePrefix(kindMessage, agent, instance, 1+seqLen), sep)
}

// messageKey is m\x00<agent>\x00<instance>\x00<seq, 8 bytes big-endian>.
func messageKey(agent, instance string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(messagePrefix(agent, instance), seq)
}

// stateKey is s\x00<agent>\x00<instance>\x00<extension>.
func stateKey(agent, instance, extension string) []byte {
	b := append(instancePrefix(kindState, agent, instance, 1+len(extension)), sep)
	return append(b, extension...)
}

// secretPrefix is c\x00<agent>\x00<instance>\x00, the prefix of the
// instance's secret keys.
func secretPrefix(agent, instance string) []byte {
	return append(instancePrefix(kindSecret, agent, instance, 1), sep)
}

// secretKey is c\x00<agent>\x00<instance>\x00<name>.
func secretKey(agent, instance, name string) []byte {
	b := append(instancePrefix(kindSecret, agent, instance, 1+len(name)), sep)
	return append(b, name...)
}

// pendingPrefix is the prefix of every pending item's key.
var pendingPrefix = []byte{kindPending, sep}

// pendingKey is p\x00<id>.
func pendingKey(id string) []byte {
	return append(bytes.Clone(pendingPrefix), id...)
}

// taskPrefix is the prefix of every task's key.
var taskPrefix = []byte{kindTask, sep}

// taskKey is t\x00<id>.
func taskKey(id string) []byte {
	return append(bytes.Clone(taskPrefix), id...)
}

// errBadKey is wrapped by every error of decodeKey.
var errBadKey = errors.New("malformed key")

// decodeKey parses a key written by encode. It accepts exactly the keys
// encode can produce, so encode(decodeKey(b)) == b whenever err is nil.
func decodeKey(b []byte) (storeKey, error) {
	bad := func(why string) (storeKey, error) {
		return storeKey{}, fmt.Errorf("%w %q: %s", errBadKey, b, why)
	}
	if len(b) == 0 {
		return bad("empty")
	}
	kind := b[0]
	if kind == kindVersion {
		if len(b) != 1 {
			return bad("trailing bytes after version tag")
		}
		return storeKey{kind: kindVersion}, nil
	}
	if kind == kindPending || kind == kindTask {
		if len(b) < 2 || b[1] != sep {
			return bad("no separator after kind")
		}
		k := storeKey{kind: kind, id: string(b[2:])}
		if err := store.ValidateName("ID", k.id); err != nil {
			return bad(err.Error())
		}
		return k, nil
	}
	if kind != kindMeta && kind != kindFence && kind != kindMessage && kind != kindState && kind != kindSecret {
		return bad("unknown kind")
	}
	if len(b) < 2 || b[1] != sep {
		return bad("no separator after kind")
	}
	rest := b[2:]
	i := bytes.IndexByte(rest, sep)
	if i < 0 {
		return bad("no separator after agent")
	}
	k := storeKey{kind: kind, agent: string(rest[:i])}
	if err := store.ValidateName("agent name", k.agent); err != nil {
		return bad(err.Error())
	}
	rest = rest[i+1:]
	switch kind {
	case kindMeta, kindFence:
		k.instance = string(rest)
	case kindMessage:
		if len(rest) < 1+seqLen || rest[len(rest)-seqLen-1] != sep {
			return bad("no sequence number")
		}
		k.instance = string(rest[:len(rest)-seqLen-1])
		k.seq = binary.BigEndian.Uint64(rest[len(rest)-seqLen:])
	case kindState:
		i := bytes.IndexByte(rest, sep)
		if i < 0 {
			return bad("no separator after instance key")
		}
		k.instance, k.extension = string(rest[:i]), string(rest[i+1:])
		if err := store.ValidateName("extension name", k.extension); err != nil {
			return bad(err.Error())
		}
	case kindSecret:
		i := bytes.IndexByte(rest, sep)
		if i < 0 {
			return bad("no separator after instance key")
		}
		k.instance, k.name = string(rest[:i]), string(rest[i+1:])
		if err := store.ValidateName("secret name", k.name); err != nil {
			return bad(err.Error())
		}
	}
	if err := store.ValidateStoredKey(k.instance); err != nil {
		return bad(err.Error())
	}
	return k, nil
}
