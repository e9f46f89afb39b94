package badger

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/ganglion-dev/ganglion/store"
)

// ErrInUse is matched (with [errors.Is]) by the error of [Open] when
// another process, or another store in this one, holds the directory.
var ErrInUse = errors.New("it is in use by another process (another ganglion running?)")

// schemaVersion is the version of the key layout and encoding this file
// reads and writes; see doc.go. Bump it, and write a migration, when either
// changes incompatibly.
const schemaVersion = 1

// checkCtxEvery is how many records LoadInstance reads between checks of
// its context.
const checkCtxEvery = 256

// badgerStore is the [store.Store] of [Open]: see there.
type badgerStore struct {
	db  *badgerdb.DB
	dir string // "" in memory

	mu     sync.RWMutex // held for reading by every call, for writing by Close
	closed bool
	// fenceMu serialises the fenced commits and the taking of fences
	// (update).
	fenceMu sync.Mutex
	// writes is held for reading by every write (update), for writing
	// while the value log is collected: Badger's collection reads its
	// memtable's latest version unlocked (DB.MaxVersion), which a write
	// changes, a data race. So writes wait for a file's rewrite.
	writes sync.RWMutex

	// stopGC ends the value log's collector (collectValueLog), gcDone
	// says it ended; both nil in memory, where there is no value log.
	stopGC context.CancelFunc
	gcDone chan struct{}
}

// Option configures [Open].
// It is implemented only by this package's With functions.
type Option interface {
	apply(*badgerConfig)
}

type badgerConfig struct {
	logger         *slog.Logger
	syncWrites     bool
	memTableSize   int64 // 0: the default (defaultMemTableSize on disk, Badger's in memory)
	blockCacheSize int64 // 0: the default (defaultBlockCacheSize on disk, Badger's in memory)

	// For tests: the value log's file size and how often it is collected
	// (0: valueLogFileSize, valueLogGCEvery).
	valueLogFileSize int64
	valueLogGCEvery  time.Duration
}

// On disk the store sizes Badger for many agents in little memory rather
// than for a database server: Badger's defaults, a 64 MiB memtable and a
// 256 MiB block cache, were most of an idle process's memory (RATIONALE.md,
// "The badger store is sized for many agents in little memory").
const (
	defaultMemTableSize   = MinMemTableSize
	defaultBlockCacheSize = MinBlockCacheSize
)

// On disk, a value of valueThreshold bytes or more (a large tool result,
// a large state) is kept in Badger's value log, and its tables hold a
// pointer to it. So it counts a few bytes against the bound of one
// commit (a share of the memtable, WithMemTableSize), not its size:
// without this, Badger's default of 1 MiB let a step's two large tool
// results fail its commit. Badger refuses a threshold over that bound.
//
// The value log is written in files of valueLogFileSize. A value
// overwritten or removed (a state each turn, a replaced message) leaves
// garbage in its file, which Badger reclaims only when asked, and never
// in the file being written: every valueLogGCEvery, collectValueLog
// rewrites the files at least valueLogDiscard garbage.
const (
	valueThreshold   = 16 << 10
	valueLogFileSize = 64 << 20
	valueLogGCEvery  = 5 * time.Minute
	valueLogDiscard  = 0.5
)

type badgerOptionFunc func(*badgerConfig)

func (f badgerOptionFunc) apply(c *badgerConfig) { f(c) }

// WithLogger sends Badger's own log to logger: its errors at
// [slog.LevelError], its warnings at [slog.LevelWarn], the rest (table
// loading, compaction, flushes) at [slog.LevelDebug]. By default Badger's log
// is discarded; it never goes to standard output or standard error. A nil
// logger restores the default.
func WithLogger(logger *slog.Logger) Option {
	return badgerOptionFunc(func(c *badgerConfig) { c.logger = logger })
}

// WithSyncWrites makes every commit wait until its data is on disk
// (default false). See the Durability section of [Open] for the trade-off.
// It has no effect in memory.
func WithSyncWrites(on bool) Option {
	return badgerOptionFunc(func(c *badgerConfig) { c.syncWrites = on })
}

// The smallest sizes [WithMemTableSize] and [WithBlockCacheSize] take. A
// commit takes up to 15 % of a memtable in records under 16 kB (larger
// ones are in the value log and count a few bytes): at 8 MiB, 1.2 MB, some
// 75 tool results just under 16 kB in one step.
const (
	MinMemTableSize   = 8 << 20
	MinBlockCacheSize = 1 << 20
)

// WithMemTableSize sets the size of each of Badger's memtables, where
// commits are kept in memory until they are written to disk in a table
// (default and least [MinMemTableSize], 8 MiB; Badger's own is 64 MiB).
//
// It sets most of the memory the store holds, and the largest commit it
// takes. An idle process holds one memtable, allocated whole, and the part
// of its log written so far; while tables are being written, up to five.
// A larger memtable buys throughput: about 10 % more turns a second at
// 64 MiB, where the store writes and compacts fewer, larger tables.
// One commit may hold at most about 15 % of a memtable in records under
// 16 kB (about 1.2 MB at the default, 9.6 MB at 64 MiB); a larger record
// counts a few bytes, as Badger keeps it in its value log. A larger
// commit fails with an error matching [badgerdb.ErrTxnTooBig], and writes
// nothing.
func WithMemTableSize(bytes int64) Option {
	return badgerOptionFunc(func(c *badgerConfig) { c.memTableSize = bytes })
}

// WithBlockCacheSize sets the size of the cache of table blocks read back
// from disk (default and least [MinBlockCacheSize], 1 MiB; Badger's own is
// 256 MiB): instances loaded again after they left the runtime's cache,
// and the reads of meta, tasks and pending items. The operating system's
// page cache holds the tables too, compressed, so a small cache costs
// decompressing them again; with many instances it held few of the
// blocks read anyway, and a larger one is memory an idle process keeps.
func WithBlockCacheSize(bytes int64) Option {
	return badgerOptionFunc(func(c *badgerConfig) { c.blockCacheSize = bytes })
}

// Open opens the store in directory dir, creating the directory and
// the store if need be: a [store.Store] kept in a Badger key-value database. The
// key layout is described in the package documentation; records, meta and
// the schema version are stored as JSON, state and sealed secrets verbatim.
//
// A process killed while Badger was creating a file can leave that file
// empty, and Badger's first open of such a directory fails ("while opening
// memtables ... Create a new file") where a second succeeds. Open
// recognises that failure, opens again (a few times at most) and logs a
// warning through the logger of [WithLogger]; the empty file held no data,
// so nothing is lost.
//
// # Errors
//
// Only one process, and one Badger in a process, may hold a directory: if
// another does, Open fails (after retrying for about 0.6 s, since a
// child process between fork and exec briefly holds the lock too) with an
// error matching [ErrInUse]:
//
//	store: open data directory "/x": it is in use by another process (another ganglion running?): <badger's error>
//
// It also fails if the directory holds a store of another schema version,
// or data that is not a store.
//
// # Durability
//
// A commit is one Badger transaction: after a crash a batch is either all
// there or not at all. By default ([WithSyncWrites] false) Commit returns
// once the write is in the operating system's page cache: a committed batch
// survives the process crashing or being killed, but the last commits may be
// lost if the machine loses power or the kernel crashes. With sync writes,
// every commit waits for the disk, which costs a few milliseconds per commit
// on most drives.
//
// # Disk space
//
// A value of 16 kB or more (a large tool result or state) is written to
// Badger's value log, in files of 64 MiB. One overwritten or removed is
// garbage there until the store collects it: every five minutes, the
// files at least half garbage are rewritten with only their live values,
// as Badger's compactions count it. Until a file is full, and Badger has
// compacted the tables that pointed into it, its garbage stays. Writes
// wait while a file is rewritten (Badger's collection races with them).
//
// # Concurrency
//
// The store is safe for concurrent use; commits to different instances run in
// parallel. Two commits to the same instance do not conflict: each is
// applied whole, the later one wins key by key. Close waits for the calls in
// progress.
func Open(dir string, opts ...Option) (store.Store, error) {
	b, err := openBadger(badgerdb.DefaultOptions(dir), dir, opts)
	if err != nil {
		if isLockError(err) {
			return nil, fmt.Errorf("store: open data directory %q: %w: %w", dir, ErrInUse, err)
		}
		return nil, fmt.Errorf("store: open data directory %q: %w", dir, err)
	}
	return store.Checked(b), nil
}

// openInMemory opens an empty store that Badger keeps in memory and
// forgets on Close. It behaves as [Open]'s, encoding included, so
// tests can use it in place of a directory. One limit differs: Badger refuses
// a single record whose encoding exceeds 1 MiB in memory.
func openInMemory(opts ...Option) (*badgerStore, error) {
	b, err := openBadger(badgerdb.DefaultOptions("").WithInMemory(true), "", opts)
	if err != nil {
		return nil, fmt.Errorf("store: open in-memory store: %w", err)
	}
	return b, nil
}

func openBadger(bopts badgerdb.Options, dir string, opts []Option) (*badgerStore, error) {
	var c badgerConfig
	for _, o := range opts {
		o.apply(&c)
	}
	for _, size := range []struct {
		name     string
		n, least int64
	}{{"memtable size", c.memTableSize, MinMemTableSize}, {"block cache size", c.blockCacheSize, MinBlockCacheSize}} {
		if size.n != 0 && size.n < size.least {
			return nil, fmt.Errorf("%s %d bytes is below the minimum of %d (%d MiB)", size.name, size.n, size.least, size.least>>20)
		}
	}
	if !bopts.InMemory {
		// In memory (tests only) Badger keeps its sizes, and there is no
		// value log: it keeps every value in its tables, and refuses one
		// of its threshold or more.
		c.memTableSize = cmp.Or(c.memTableSize, defaultMemTableSize)
		c.blockCacheSize = cmp.Or(c.blockCacheSize, defaultBlockCacheSize)
		bopts = bopts.WithValueThreshold(valueThreshold).
			WithValueLogFileSize(cmp.Or(c.valueLogFileSize, valueLogFileSize))
	}
	if c.memTableSize != 0 {
		bopts = bopts.WithMemTableSize(c.memTableSize)
	}
	if c.blockCacheSize != 0 {
		bopts = bopts.WithBlockCacheSize(c.blockCacheSize)
	}
	var logger badgerdb.Logger // nil: Badger logs nothing
	if c.logger != nil {
		logger = badgerLogger{c.logger}
	}
	bopts = bopts.
		WithLogger(logger).
		WithSyncWrites(c.syncWrites).
		// Commits write blindly and never read in their transaction, so
		// there is nothing to detect; fenced ones are serialised apart
		// (update).
		WithDetectConflicts(false).
		// Badger's metrics are process-wide expvars; nothing reads them.
		WithMetricsEnabled(false)
	db, err := badgerdb.Open(bopts)
	wait, retries := 10*time.Millisecond, 0
retry:
	for err != nil {
		switch {
		// The directory's lock is a flock, shared by every process that
		// holds its file open. A child this process forks (execute_command)
		// holds it for the instant between fork and exec, so a lock that a
		// Close in this process has just released can still look taken:
		// wait a little before concluding that another process has it.
		case isLockError(err) && wait <= 320*time.Millisecond:
			time.Sleep(wait)
			wait *= 2
		// Badger's first open of an empty file a crash left behind sizes
		// the file, then fails; the next open reads it as the empty log it
		// is. See isEmptyFileError.
		case isEmptyFileError(err) && retries < maxEmptyFileRetries:
			retries++
			if c.logger != nil {
				c.logger.Warn("store: opening the data directory again: the first try met an empty file that a crash left behind",
					"dir", dir, "attempt", retries, "err", err)
			}
		default:
			break retry
		}
		db, err = badgerdb.Open(bopts)
	}
	if err != nil {
		return nil, err
	}
	if err := checkSchema(db); err != nil {
		_ = db.Close()
		return nil, err
	}
	s := &badgerStore{db: db, dir: dir}
	if !bopts.InMemory {
		ctx, stop := context.WithCancel(context.Background())
		s.stopGC, s.gcDone = stop, make(chan struct{})
		go s.collectValueLog(ctx, cmp.Or(c.valueLogGCEvery, valueLogGCEvery), c.logger)
	}
	return s, nil
}

// collectValueLog reclaims the value log's garbage every period until
// the store closes. Badger picks the file with the most garbage, by the
// counts its compactions keep, and rewrites what is live in it; a round
// repeats while a file qualifies. A failure is logged and tried again next
// period: the garbage only waits.
func (s *badgerStore) collectValueLog(ctx context.Context, every time.Duration, logger *slog.Logger) {
	defer close(s.gcDone)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := s.gcValueLog(ctx); err != nil && logger != nil {
			logger.Warn("store: collecting the value log's garbage", "dir", s.dir, "err", err)
		}
	}
}

// gcValueLog runs rounds of Badger's value log collection until no file
// has valueLogDiscard garbage or ctx ends, and returns how many files it
// rewrote. It holds the store open: Close waits for the file being
// rewritten.
func (s *badgerStore) gcValueLog(ctx context.Context) (rewritten int, err error) {
	for ctx.Err() == nil {
		if s.Begin() != nil {
			return rewritten, nil // closed: nothing left to do
		}
		s.writes.Lock()
		err := s.db.RunValueLogGC(valueLogDiscard)
		s.writes.Unlock()
		s.End()
		// ErrNoRewrite: no file has the garbage; ErrRejected: a
		// collection is running already.
		if errors.Is(err, badgerdb.ErrNoRewrite) || errors.Is(err, badgerdb.ErrRejected) {
			return rewritten, nil
		}
		if err != nil {
			return rewritten, err
		}
		rewritten++
	}
	return rewritten, nil
}

// maxEmptyFileRetries bounds how many times openBadger opens a directory
// again after [isEmptyFileError]. Each retry gets past one empty file, and a
// crash leaves at most one memtable and one value log file empty; the rest
// is margin.
const maxEmptyFileRetries = 4

// isEmptyFileError reports whether err is Badger failing to open a
// directory because a memtable (.mem) or value log (.vlog) file in it is
// empty. Badger creates such a file, then sizes it, so a process killed in
// between leaves it empty. Opening it, Badger sizes it and writes its header,
// but then takes the "new file" signal of its mmap layer (z.NewFile, "Create
// a new file") for a failure and gives up; the next open finds a sized file
// with no entries and goes on. No data is lost: the file was empty. (Badger
// issue 2207.) Badger flattens the cause into its text, so the text is all
// there is.
func isEmptyFileError(err error) bool {
	msg := err.Error()
	return strings.HasSuffix(msg, "Create a new file") &&
		(strings.HasPrefix(msg, "while opening memtables") || strings.HasPrefix(msg, "During db.vlog.open"))
}

// isLockError reports whether err is Badger failing to lock its directory.
// Badger flattens the cause into its text, so the text is all there is.
func isLockError(err error) bool {
	return strings.Contains(err.Error(), "Another process is using this Badger database")
}

// checkSchema writes the schema version into an empty database and checks it
// in any other.
func checkSchema(db *badgerdb.DB) error {
	return db.Update(func(txn *badgerdb.Txn) error {
		item, err := txn.Get(versionKey)
		if errors.Is(err, badgerdb.ErrKeyNotFound) {
			opts := badgerdb.DefaultIteratorOptions
			opts.PrefetchValues = false
			it := txn.NewIterator(opts)
			it.Rewind()
			var first []byte
			if it.Valid() {
				first = it.Item().KeyCopy(nil)
			}
			it.Close()
			if first != nil {
				return fmt.Errorf("no schema version but data (first key %q): not a ganglion store", first)
			}
			return txn.Set(versionKey, []byte(fmt.Sprint(schemaVersion)))
		}
		if err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		var v int
		if err := item.Value(func(b []byte) error { return json.Unmarshal(b, &v) }); err != nil {
			return fmt.Errorf("corrupt schema version at key %q: %w", versionKey, err)
		}
		if v != schemaVersion {
			return fmt.Errorf("schema version is %d, this build reads version %d", v, schemaVersion)
		}
		return nil
	})
}

// begin takes the read lock and checks that the store is open; end releases
// the lock.
func (s *badgerStore) Begin() error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return store.ErrClosed
	}
	return nil
}

func (s *badgerStore) End() { s.mu.RUnlock() }

// LoadInstance implements [store.Store.LoadInstance]. found is true when the instance
// has meta or records.
//
// It fails, naming the key, if a stored value cannot be decoded.
func (s *badgerStore) LoadInstance(ctx context.Context, agent, key string) (meta store.Meta, records []store.Record, found bool, err error) {
	err = s.db.View(func(txn *badgerdb.Txn) error {
		item, err := txn.Get(metaKey(agent, key))
		switch {
		case err == nil:
			found = true
			if err := item.Value(func(v []byte) error { return json.Unmarshal(v, &meta) }); err != nil {
				return corrupt(item.Key(), err)
			}
		case !errors.Is(err, badgerdb.ErrKeyNotFound):
			return err
		}

		prefix := messagePrefix(agent, key)
		opts := badgerdb.DefaultIteratorOptions
		opts.Prefix = prefix
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if len(records)%checkCtxEvery == checkCtxEvery-1 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			item := it.Item()
			k := item.Key()
			if len(k) != len(prefix)+seqLen {
				return fmt.Errorf("%w %q: wrong length for a message key", errBadKey, k)
			}
			seq := binary.BigEndian.Uint64(k[len(prefix):])
			var r store.Record
			if err := item.Value(func(v []byte) error { return json.Unmarshal(v, &r) }); err != nil {
				return corrupt(k, err)
			}
			if r.Seq != seq {
				return corrupt(k, fmt.Errorf("record has seq %d", r.Seq))
			}
			if r.Message == nil {
				return corrupt(k, errors.New("record has no message"))
			}
			records = append(records, r)
		}
		return nil
	})
	if err != nil {
		return store.Meta{}, nil, false, fmt.Errorf("store: load agent %q instance %q: %w", agent, key, err)
	}
	found = found || len(records) > 0
	return meta, records, found, nil
}

// LoadMeta implements [store.Store.LoadMeta]: one key, however long the history.
func (s *badgerStore) LoadMeta(ctx context.Context, agent, key string) (meta store.Meta, found bool, err error) {
	err = s.db.View(func(txn *badgerdb.Txn) error {
		item, err := txn.Get(metaKey(agent, key))
		switch {
		case errors.Is(err, badgerdb.ErrKeyNotFound):
			return nil
		case err != nil:
			return err
		}
		found = true
		if err := item.Value(func(v []byte) error { return json.Unmarshal(v, &meta) }); err != nil {
			return corrupt(item.Key(), err)
		}
		return nil
	})
	if err != nil {
		return store.Meta{}, false, fmt.Errorf("store: load agent %q instance %q meta: %w", agent, key, err)
	}
	return meta, found, nil
}

// corrupt is the error for a value under key that cannot be decoded.
func corrupt(key []byte, err error) error {
	return fmt.Errorf("corrupt value at key %q: %w", key, err)
}

// Commit implements [store.Store.Commit], in one Badger transaction.
//
// # Errors
//
// A batch that does not fit in one transaction (about 15 % of the memtable
// size of [WithMemTableSize] in encoded records under 16 kB, 1.2 MB by
// default; a larger record counts a few bytes) fails
// with an error matching [badgerdb.ErrTxnTooBig], as does a record Badger
// refuses or JSON cannot encode; in every case nothing of the batch is
// written.
func (s *badgerStore) Commit(ctx context.Context, agent, key string, b store.Batch) error {
	if b.Empty() {
		return nil
	}
	err := s.update(b.Fence != 0, func(txn *badgerdb.Txn) error {
		if b.Fence != 0 {
			latest, err := readFence(txn, agent, key)
			if err != nil {
				return err
			}
			if latest != b.Fence {
				return store.ErrFenced
			}
		}
		for i := range b.Put {
			r := &b.Put[i]
			v, err := json.Marshal(r)
			if err != nil {
				return fmt.Errorf("encode record %d: %w", r.Seq, err)
			}
			if err := txn.Set(messageKey(agent, key, r.Seq), v); err != nil {
				return fmt.Errorf("write record %d: %w", r.Seq, err)
			}
		}
		for _, seq := range b.Delete {
			if err := txn.Delete(messageKey(agent, key, seq)); err != nil {
				return fmt.Errorf("delete record %d: %w", seq, err)
			}
		}
		if b.Meta != nil {
			v, err := json.Marshal(b.Meta)
			if err != nil {
				return fmt.Errorf("encode meta: %w", err)
			}
			if err := txn.Set(metaKey(agent, key), v); err != nil {
				return fmt.Errorf("write meta: %w", err)
			}
		}
		for _, r := range b.Pending {
			v, err := json.Marshal(r)
			if err != nil {
				return fmt.Errorf("encode pending item %q: %w", r.ID, err)
			}
			if err := txn.Set(pendingKey(r.ID), v); err != nil {
				return fmt.Errorf("write pending item %q: %w", r.ID, err)
			}
		}
		for ext, v := range b.State {
			var err error
			if v == nil {
				err = txn.Delete(stateKey(agent, key, ext))
			} else {
				err = txn.Set(stateKey(agent, key, ext), bytes.Clone(v)) // kept until the commit
			}
			if err != nil {
				return fmt.Errorf("write the state of extension %q: %w", ext, err)
			}
		}
		for _, id := range b.DeleteTasks {
			if err := txn.Delete(taskKey(id)); err != nil {
				return fmt.Errorf("delete task %q: %w", id, err)
			}
		}
		return setTasks(txn, b.Tasks)
	})
	switch {
	case errors.Is(err, store.ErrFenced):
		return store.Fenced(agent, key, b.Fence)
	case errors.Is(err, badgerdb.ErrTxnTooBig):
		return fmt.Errorf("store: commit agent %q instance %q: batch of %d puts and %d deletes too large for one transaction (%s), nothing written: %w",
			agent, key, len(b.Put), len(b.Delete), s.commitBound(), err)
	case err != nil:
		return fmt.Errorf("store: commit agent %q instance %q: nothing written: %w", agent, key, err)
	}
	return nil
}

// commitBound says how much one commit holds, for its error.
func (s *badgerStore) commitBound() string {
	o := s.db.Opts()
	bound := fmt.Sprintf("about %d kB", o.MemTableSize*15/100>>10)
	if !o.InMemory {
		// In memory there is no value log: every record counts whole.
		bound += fmt.Sprintf(" of records under %d kB", o.ValueThreshold>>10)
	}
	return bound + fmt.Sprintf(" with a memtable of %d MiB", o.MemTableSize>>20)
}

// update runs f in a read-write transaction. A fenced one (fenced true)
// reads the fence that [store.Store.Fence] writes: the database detects no
// conflicts (commits write blindly), so those two hold fenceMu, which
// makes the fence's read and the commit one step. Badger is one
// process's, so a mutex of the process is enough.
func (s *badgerStore) update(fenced bool, f func(txn *badgerdb.Txn) error) error {
	s.writes.RLock()
	defer s.writes.RUnlock()
	if fenced {
		s.fenceMu.Lock()
		defer s.fenceMu.Unlock()
	}
	return s.db.Update(f)
}

// readFence returns the instance's latest fence, zero if none was taken.
func readFence(txn *badgerdb.Txn, agent, key string) (uint64, error) {
	item, err := txn.Get(fenceKey(agent, key))
	if errors.Is(err, badgerdb.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the fence: %w", err)
	}
	var fence uint64
	err = item.Value(func(v []byte) error {
		if len(v) != 8 {
			return fmt.Errorf("corrupt fence: %d bytes, want 8", len(v))
		}
		fence = binary.BigEndian.Uint64(v)
		return nil
	})
	return fence, err
}

// Fence implements [store.Store.Fence].
func (s *badgerStore) Fence(ctx context.Context, agent, key string) (uint64, error) {
	var fence uint64
	err := s.update(true, func(txn *badgerdb.Txn) error {
		latest, err := readFence(txn, agent, key)
		if err != nil {
			return err
		}
		fence = latest + 1
		return txn.Set(fenceKey(agent, key), binary.BigEndian.AppendUint64(nil, fence))
	})
	if err != nil {
		return 0, fmt.Errorf("store: take the fence of agent %q instance %q: %w", agent, key, err)
	}
	return fence, nil
}

// Instances implements [store.Store.Instances]. It reads only the agent's keys, and
// of those, one per instance and kind; it skips the secret kind, as secrets do
// not make an instance exist. It returns nil when agent has no instance.
func (s *badgerStore) Instances(ctx context.Context, agent string) ([]string, error) {
	var keys []string
	err := s.db.View(func(txn *badgerdb.Txn) error {
		for _, kind := range [...]byte{kindMeta, kindMessage, kindState} { // not kindSecret
			opts := badgerdb.DefaultIteratorOptions
			opts.PrefetchValues = false
			opts.Prefix = agentPrefix(kind, agent)
			if err := scanInstances(ctx, txn, opts, &keys); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: instances of agent %q: %w", agent, err)
	}
	slices.Sort(keys)
	return slices.Compact(keys), nil
}

// scanInstances appends to keys the instance key of every key under
// opts.Prefix, reading one key per instance: after each it seeks past the
// instance, whose key cannot contain the NUL that ends it.
func scanInstances(ctx context.Context, txn *badgerdb.Txn, opts badgerdb.IteratorOptions, keys *[]string) error {
	it := txn.NewIterator(opts)
	defer it.Close()
	for it.Rewind(); it.Valid(); {
		if err := ctx.Err(); err != nil {
			return err
		}
		k, err := decodeKey(it.Item().Key())
		if err != nil {
			return err
		}
		*keys = append(*keys, k.instance)
		next := append(slices.Clone(opts.Prefix), k.instance...)
		it.Seek(append(next, sep+1))
	}
	return nil
}

// GetState implements [store.Store.GetState]. An empty stored value is returned as an
// empty, non-nil slice.
func (s *badgerStore) GetState(ctx context.Context, agent, key, extension string) ([]byte, error) {
	var value []byte
	err := s.db.View(func(txn *badgerdb.Txn) error {
		item, err := txn.Get(stateKey(agent, key, extension))
		if errors.Is(err, badgerdb.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		value, err = item.ValueCopy([]byte{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: get state of extension %q for agent %q instance %q: %w", extension, agent, key, err)
	}
	return value, nil
}

// PutSecret implements [store.Store.PutSecret]. The sealed value is stored verbatim.
func (s *badgerStore) PutSecret(ctx context.Context, agent, key, name string, sealed []byte) error {
	// Badger keeps the slice until the transaction commits.
	v := bytes.Clone(sealed)
	if err := s.update(false, func(txn *badgerdb.Txn) error { return txn.Set(secretKey(agent, key, name), v) }); err != nil {
		return fmt.Errorf("store: put secret %q of agent %q instance %q: %w", name, agent, key, err)
	}
	return nil
}

// GetSecret implements [store.Store.GetSecret].
func (s *badgerStore) GetSecret(ctx context.Context, agent, key, name string) ([]byte, bool, error) {
	var sealed []byte
	found := false
	err := s.db.View(func(txn *badgerdb.Txn) error {
		item, err := txn.Get(secretKey(agent, key, name))
		if errors.Is(err, badgerdb.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		sealed, err = item.ValueCopy(nil)
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("store: get secret %q of agent %q instance %q: %w", name, agent, key, err)
	}
	return sealed, found, nil
}

// ListSecrets implements [store.Store.ListSecrets]. It reads the instance's secret
// keys, not their values.
func (s *badgerStore) ListSecrets(ctx context.Context, agent, key string) ([]string, error) {
	var names []string
	err := s.db.View(func(txn *badgerdb.Txn) error {
		opts := badgerdb.DefaultIteratorOptions
		opts.PrefetchValues = false
		opts.Prefix = secretPrefix(agent, key)
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			k, err := decodeKey(it.Item().Key())
			if err != nil {
				return err
			}
			names = append(names, k.name) // keys, and so names, come sorted
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: list secrets of agent %q instance %q: %w", agent, key, err)
	}
	return names, nil
}

// Close waits for the calls in progress, then closes the database and
// releases the directory. Later calls, Close included, fail with [store.ErrClosed].
func (s *badgerStore) Close() error {
	if s.stopGC != nil {
		s.stopGC() // a second Close stops it again, which does nothing
		<-s.gcDone
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	s.closed = true
	if err := s.db.Close(); err != nil {
		if s.dir == "" {
			return fmt.Errorf("store: close in-memory store: %w", err)
		}
		return fmt.Errorf("store: close data directory %q: %w", s.dir, err)
	}
	return nil
}

// badgerLogger passes Badger's log to a [slog.Logger].
type badgerLogger struct{ l *slog.Logger }

func (b badgerLogger) log(level slog.Level, format string, args []any) {
	ctx := context.Background()
	if !b.l.Enabled(ctx, level) {
		return
	}
	msg := strings.TrimSpace(fmt.Sprintf(format, args...))
	// Badger reports the failed open that openBadger retries (see
	// isEmptyFileError) as an error; openBadger says what happened at
	// warning level, so here it is detail.
	if level == slog.LevelError && strings.HasPrefix(msg, "Received err: ") && strings.HasSuffix(msg, "Create a new file. Cleaning up...") {
		level = slog.LevelDebug
		if !b.l.Enabled(ctx, level) {
			return
		}
	}
	b.l.Log(ctx, level, "badger: "+msg)
}

func (b badgerLogger) Errorf(f string, a ...any)   { b.log(slog.LevelError, f, a) }
func (b badgerLogger) Warningf(f string, a ...any) { b.log(slog.LevelWarn, f, a) }
func (b badgerLogger) Infof(f string, a ...any)    { b.log(slog.LevelDebug, f, a) }
func (b badgerLogger) Debugf(f string, a ...any)   { b.log(slog.LevelDebug, f, a) }

var (
	_ store.Backend   = (*badgerStore)(nil)
	_ badgerdb.Logger = badgerLogger{}
)
