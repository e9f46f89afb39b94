package engine

import (
	"strconv"
	"strings"
	"sync"
)

// cachedIDs is how many message and turn IDs are built once and shared.
const cachedIDs = 4096

// MessageID and TurnID name a message ("msg-7") and a turn ("turn-3") of an
// instance by their number. The first cachedIDs of each are built once
// and shared by every instance, since each instance counts from zero: a
// turn's messages and the turn itself need no allocation for their IDs
// (about 100 KB for each table).
var (
	MessageID = idTable("msg-")
	TurnID    = idTable("turn-")
)

// idTable returns the namer of IDs prefix followed by a number.
func idTable(prefix string) func(n uint64) string {
	table := sync.OnceValue(func() []string {
		// One string holds them all; each ID is a slice of it.
		var b strings.Builder
		ends := make([]int, cachedIDs)
		for i := range cachedIDs {
			b.WriteString(prefix)
			b.WriteString(strconv.Itoa(i))
			ends[i] = b.Len()
		}
		all := b.String()
		ids := make([]string, cachedIDs)
		start := 0
		for i, end := range ends {
			ids[i], start = all[start:end], end
		}
		return ids
	})
	return func(n uint64) string {
		if n >= cachedIDs {
			return prefix + strconv.FormatUint(n, 10)
		}
		return table()[n]
	}
}
