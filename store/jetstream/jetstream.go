package jetstream

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/ganglion-dev/ganglion/internal/jsopen"

	"github.com/ganglion-dev/ganglion/store"
)

// Option configures [Open].
type Option interface{ applyJetStream(*jsConfig) }

type jsConfig struct {
	replicas       int
	storage        natsjs.StorageType
	requestTimeout time.Duration
}

type jsOptionFunc func(*jsConfig)

func (f jsOptionFunc) applyJetStream(c *jsConfig) { f(c) }

// WithReplicas keeps n copies of the bucket on a NATS cluster's servers
// (default 1; a cluster of three takes 3, so that the data outlives a
// server). It applies when the bucket is created.
func WithReplicas(n int) Option {
	return jsOptionFunc(func(c *jsConfig) { c.replicas = max(1, n) })
}

// defaultRequestTimeout is how long the JetStream store waits for the
// server's answer to one request, unless [WithRequestTimeout] says
// otherwise. A live cluster answers in milliseconds; a commit of a large
// batch to three replicas on file storage, or any request while the
// bucket's stream elects a new leader after a server died (about 5 s in a
// soak of three servers), takes seconds. 10 s outlasts both, and is short
// enough that a process whose server died gives up on it, and on the
// instance's turn, well within a minute.
const defaultRequestTimeout = 10 * time.Second

// WithRequestTimeout bounds each request the store sends to the server
// (default 10 s, which outlasts a stream's leader election after a
// server died; d <= 0 keeps it): a request the
// server does not answer within d fails with an error matching
// [store.ErrUnavailable], whether or not the caller's ctx has a deadline; a
// commit's last request, with [store.ErrOutcomeUnknown] too. A call of the
// store may send several requests, each with its own d.
func WithRequestTimeout(d time.Duration) Option {
	return jsOptionFunc(func(c *jsConfig) {
		if d > 0 {
			c.requestTimeout = d
		}
	})
}

// Open returns a store.Store kept in a JetStream key-value bucket of
// the NATS server nc is connected to, which it creates if it does not
// exist: every process that opens the same bucket shares the same
// instances. nc stays the caller's: Close does not close it.
//
// The store does not decide which process runs an instance's turns: two
// runtimes that commit to one instance at once would interleave its
// sequence numbers. The runtime's cluster mode holds a lease per instance
// and commits with the instance's fence ([store.Store.Fence]), which the server
// checks atomically with the batch (jetstream_fence.go).
//
// # Layout and atomicity
//
// Everything is in one bucket, so that one commit is one atomic batch of
// messages to one stream (JetStream's atomic batch publish, NATS server
// 2.12 or later): a step's messages, its meta, its tasks and its pending
// items are all applied, or none. A key names what it holds, each name
// encoded in unpadded base64url (instance keys are any UTF-8):
//
//	meta.AGENT.INSTANCE              the instance's store.Meta
//	msg.AGENT.INSTANCE.SEQ           a store.Record (SEQ: 16 hex digits)
//	state.AGENT.INSTANCE.EXTENSION   an extension's state
//	secret.AGENT.INSTANCE.NAME       a sealed secret
//	pending.ID                       a store.PendingRecord
//	pindex.AGENT.INSTANCE.ID         the same, to list an instance's
//	task.ID                          a store.TaskRecord
//	tindex.AGENT.INSTANCE.ID         the same, to list an instance's
//	fence.AGENT.INSTANCE             the instance's latest fence
//
// A pending item or task is kept twice, under its ID and under its
// instance, written together in one batch, so that a lookup by ID and a
// listing of one instance's read only what they return.
//
// A load reads the instance's keys in one direct get, which the server
// isolates from commits: it sees each commit whole or not at all.
//
// Opening creates the bucket, or updates one whose replicas or storage
// differ from the options' (meanwhile other processes' commits may be
// refused: change them with the cluster stopped). A busy cluster may take
// more than the client's default 5 s a request to do either: with a ctx
// that has no deadline, opening waits up to 30 s. Meanwhile it tries again
// while the cluster cannot place the bucket's replicas because a server
// looks offline (as it does for a moment after its route to the leader
// comes back), or has no JetStream leader; any other refusal fails at once.
//
// # Limits
//
// A commit is at most the server's atomic batch size (1,000 messages by
// default: records, deletions, meta, tasks and pending items together),
// and each value at most the connection's maximum payload (1 MB by
// default); a larger one fails, naming the limit, and writes nothing. An
// instance of more than 1,023 messages is loaded through a watch, which
// a commit to the same instance landing meanwhile can split.
//
// # Errors
//
// Every request to the server is bounded ([WithRequestTimeout]), so that
// no call waits forever for a server that died with the request; one that
// went out before nc reconnected (to another server, its own having died)
// waits a second more at most, as its answer was lost with the old
// connection unless its stream had not answered yet. A call
// whose request got no answer in time, or found no server to answer it
// (the stream has no leader while the cluster elects one), fails with an
// error matching [store.ErrUnavailable]. A commit whose last request, the one
// that commits the batch, got no answer matches [store.ErrOutcomeUnknown] too:
// the server may have stored the batch whole, or not at all; a commit that
// failed before it sent that request wrote nothing.
func Open(ctx context.Context, nc *nats.Conn, bucket string, opts ...Option) (store.Store, error) {
	c := jsConfig{replicas: 1, storage: natsjs.FileStorage, requestTimeout: defaultRequestTimeout}
	for _, o := range opts {
		o.applyJetStream(&c)
	}
	if err := store.ValidateName("bucket name", bucket); err != nil || strings.Contains(bucket, ".") {
		return nil, fmt.Errorf("store: invalid bucket name %q: want letters, digits, '_' or '-'", bucket)
	}
	ctx, cancel := jsopen.Bound(ctx)
	defer cancel()
	// A request the client makes without a deadline of the caller's (a
	// watch's consumer, which the meta leader creates) waits the store's
	// request timeout, not the library's default of 5 s: under load a
	// listing failed after 5 s saying the server did not answer within 10.
	js, err := natsjs.New(nc, natsjs.WithDefaultTimeout(c.requestTimeout))
	if err != nil {
		return nil, fmt.Errorf("store: open bucket %q: %w", bucket, err)
	}
	kv, stream, err := openBucket(ctx, js, bucket, c)
	if err != nil {
		return nil, fmt.Errorf("store: open bucket %q: %w", bucket, err)
	}
	s := &jsStore{nc: nc, kv: kv, stream: stream, subject: "$KV." + bucket + ".", maxPayload: nc.MaxPayload(), replicated: c.replicas > 1, timeout: c.requestTimeout,
		conn: watchConn(nc)}
	return store.Checked(s), nil
}

// openBucket returns the bucket and its stream, creating the bucket or
// updating it to c. An existing bucket that is as c asks, its stream
// taking atomic batches, is used as it is: an update rewrites the stream's
// configuration from the bucket's, which cannot say "atomic batches", and
// until the flag was set again every other process's commit was refused
// ("atomic publish is disabled").
func openBucket(ctx context.Context, js natsjs.JetStream, bucket string, c jsConfig) (natsjs.KeyValue, natsjs.Stream, error) {
	stream, err := jsopen.Create(ctx, func(ctx context.Context) (natsjs.Stream, error) { return js.Stream(ctx, "KV_"+bucket) })
	switch {
	case err == nil:
		if cfg := stream.CachedInfo().Config; cfg.AllowAtomicPublish && cfg.Replicas == c.replicas && cfg.Storage == c.storage && cfg.MaxMsgsPerSubject == 1 {
			kv, err := jsopen.Create(ctx, func(ctx context.Context) (natsjs.KeyValue, error) { return js.KeyValue(ctx, bucket) })
			if err == nil {
				err = jsopen.WaitLeader(ctx, stream)
			}
			return kv, stream, err
		}
	case !errors.Is(err, natsjs.ErrStreamNotFound):
		return nil, nil, err
	}
	kv, stream, err := jsopen.KeyValue(ctx, js, natsjs.KeyValueConfig{
		Bucket: bucket, Description: "Ganglion's instances", History: 1, Storage: c.storage, Replicas: c.replicas,
	})
	if err != nil {
		return nil, nil, err
	}
	// The bucket's stream must take atomic batches; a key-value
	// configuration cannot say so, its stream's can.
	if cfg := stream.CachedInfo().Config; !cfg.AllowAtomicPublish {
		cfg.AllowAtomicPublish = true
		if _, err := jsopen.Create(ctx, func(ctx context.Context) (natsjs.Stream, error) { return js.UpdateStream(ctx, cfg) }); err != nil {
			return nil, nil, fmt.Errorf("allow atomic batches (NATS server 2.12 or later): %w", err)
		}
	}
	return kv, stream, nil
}

// jsStore is the JetStream backend of [Open].
type jsStore struct {
	nc         *nats.Conn
	kv         natsjs.KeyValue
	stream     natsjs.Stream // the bucket's
	subject    string        // of a key: subject + key
	maxPayload int64
	// replicated: the bucket has more than one replica, whose direct
	// gets a replica behind its leader may answer (see snapshot).
	replicated bool
	timeout    time.Duration // of each request ([WithRequestTimeout])
	conn       *connWatch    // ends the requests a reconnection orphaned (jetstream_requests.go)

	mu     sync.RWMutex // held for reading by each call, for writing by close
	closed bool
}

func (s *jsStore) Begin() error {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return store.ErrClosed
	}
	return nil
}

func (s *jsStore) End() { s.mu.RUnlock() }

func (s *jsStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	s.closed = true
	s.conn.close()
	return nil
}

// enc encodes a name for a key: any bytes, in the key's alphabet.
// errBadKey is wrapped by the error of a key the store cannot decode.
var errBadKey = errors.New("malformed key")

func enc(name string) string { return base64.RawURLEncoding.EncodeToString([]byte(name)) }

func dec(token string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	return string(b), err
}

func jsInstance(kind, agent, key string) string { return kind + "." + enc(agent) + "." + enc(key) }

func jsMetaKey(agent, key string) string { return jsInstance("meta", agent, key) }

func jsMessageKey(agent, key string, seq uint64) string {
	return jsInstance("msg", agent, key) + "." + fmt.Sprintf("%016x", seq)
}

// get returns the value of key; nil, false if there is none.
func (s *jsStore) get(ctx context.Context, key string) ([]byte, bool, error) {
	if s.replicated {
		// A key-value get is a direct get, which a replica behind its
		// leader may answer (see snapshot): ask the leader.
		return s.leaderGet(ctx, key)
	}
	rctx, cancel := s.request(ctx)
	defer cancel()
	e, err := s.kv.Get(rctx, key)
	switch {
	case errors.Is(err, natsjs.ErrKeyNotFound):
		return nil, false, nil
	case err != nil:
		return nil, false, s.unavailable(ctx, err)
	}
	v := e.Value()
	if v == nil {
		v = []byte{}
	}
	return v, true, nil
}

// maxSnapshotWait bounds how long each keeps reading keys that change
// while it reads them.
const maxSnapshotWait = 5 * time.Second

// LoadInstance implements [store.Store.LoadInstance]: the meta and the records
// as of one point of the stream, never from either side of a commit.
func (s *jsStore) LoadInstance(ctx context.Context, agent, key string) (store.Meta, []store.Record, bool, error) {
	var (
		meta    store.Meta
		found   bool
		records []store.Record
	)
	metaKey := jsMetaKey(agent, key)
	err := s.snapshot(ctx, []string{metaKey, jsInstance("msg", agent, key) + ".*"}, false, func(k string, v []byte) error {
		if k == metaKey {
			found = true
			if err := json.Unmarshal(v, &meta); err != nil {
				return fmt.Errorf("corrupt value at key %q: %w", k, err)
			}
			return nil
		}
		seq, err := strconv.ParseUint(k[strings.LastIndexByte(k, '.')+1:], 16, 64)
		if err != nil {
			return fmt.Errorf("%w %q: not a message key", errBadKey, k)
		}
		var r store.Record
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("corrupt value at key %q: %w", k, err)
		}
		if r.Seq != seq {
			return fmt.Errorf("corrupt value at key %q: record has seq %d", k, r.Seq)
		}
		if r.Message == nil {
			return fmt.Errorf("corrupt value at key %q: record has no message", k)
		}
		records = append(records, r)
		return nil
	})
	if err != nil {
		return store.Meta{}, nil, false, fmt.Errorf("store: load agent %q instance %q: %w", agent, key, err)
	}
	slices.SortFunc(records, func(a, b store.Record) int { return cmp.Compare(a.Seq, b.Seq) })
	return meta, records, found || len(records) > 0, nil
}

// errTooManyKeys is snapshotGet's error past the keys the server returns
// in one isolated read: 1,024, its direct get's limit.
var errTooManyKeys = errors.New("more keys than one isolated read returns")

// snapshot calls f with each live key that matches one of filters, and its
// value, as of one point of the stream: a commit's values are all seen, or
// none. It asks the server for the last value of each key in one direct
// get, which the server isolates from commits and answers without making
// a consumer. Past 1,024 keys it watches them instead (each, with values
// unless keysOnly), which a commit landing meanwhile can split.
//
// Any replica of a replicated bucket answers direct gets, and a follower
// may not have applied the last commits yet: a read right after a commit,
// by the process that made it or by one it told, would miss it (a
// delegation's report turn found its task still waiting, and the task
// hung). So on a replicated bucket snapshot first asks the leader for the
// stream's last sequence, and reads again until the replica that answers
// has reached it: it sees every commit acknowledged before it began. A
// replica that finds no key at all does not say where it is; the leader
// is then asked whether any filter has a message (checkEmpty).
func (s *jsStore) snapshot(ctx context.Context, filters []string, keysOnly bool, f func(key string, value []byte) error) error {
	var floor uint64
	if s.replicated {
		rctx, cancel := s.request(ctx)
		info, err := s.stream.Info(rctx)
		cancel()
		if err != nil {
			return s.unavailable(ctx, err)
		}
		floor = info.State.LastSeq
	}
	// A stream just created on a cluster answers direct gets once its
	// replicas are up: until then the server says no one responds (503).
	deadline := time.Now().Add(maxSnapshotWait)
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		err := s.snapshotGet(ctx, filters, floor, f)
		switch {
		case errors.Is(err, errTooManyKeys):
			return s.each(ctx, filters, keysOnly, func(e natsjs.KeyValueEntry) error { return f(e.Key(), e.Value()) })
		case !errors.Is(err, errNoResponders) && !errors.Is(err, errBehind):
			return err
		case time.Now().After(deadline) && errors.Is(err, errBehind):
			return &unavailableError{msg: fmt.Sprintf("the replica that answered stayed behind its leader for %s", maxSnapshotWait), err: err}
		case time.Now().After(deadline):
			return s.unavailable(ctx, err)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// errNoResponders is snapshotGet's error when no server answers direct
// gets for the stream yet.
var errNoResponders = errors.New("no server answers direct gets for the bucket (yet)")

// leaderGet returns key's value as the stream's leader has it.
func (s *jsStore) leaderGet(ctx context.Context, key string) ([]byte, bool, error) {
	m, err := s.leaderLast(ctx, s.subject+key)
	switch {
	case err != nil:
		return nil, false, fmt.Errorf("read %s: %w", key, err)
	case m == nil || bytes.Contains(m.Header, []byte("KV-Operation")):
		return nil, false, nil // none, deleted or purged
	}
	v := m.Data
	if v == nil {
		v = []byte{}
	}
	return v, true, nil
}

// Ping implements [checkedStore.Ping]: it asks the stream's leader for
// the last message of a key that is never written, which the leader
// answers at once, that there is none. A replica alone, which answers a
// read but cannot take a commit, does not answer it.
func (s *jsStore) Ping(ctx context.Context) error {
	if _, err := s.leaderLast(ctx, s.subject+"ping"); err != nil {
		return fmt.Errorf("store: ping bucket %q: %w", strings.TrimPrefix(s.stream.CachedInfo().Config.Name, "KV_"), err)
	}
	return nil
}

var (
	_ store.Backend                            = (*jsStore)(nil)
	_ interface{ Ping(context.Context) error } = (*jsStore)(nil)
)

// storedMsg is a message of the stream as its leader answers it.
type storedMsg struct {
	Subject string `json:"subject"`
	Seq     uint64 `json:"seq"`
	Header  []byte `json:"hdrs"`
	Data    []byte `json:"data"`
}

// leaderLast asks the stream's leader for the last message on subject,
// which may have wildcards; nil if there is none. Unlike a direct get, only
// the leader answers.
func (s *jsStore) leaderLast(ctx context.Context, subject string) (*storedMsg, error) {
	body, err := json.Marshal(struct {
		LastBySubj string `json:"last_by_subj"`
	}{subject})
	if err != nil {
		return nil, err
	}
	rctx, cancel := s.request(ctx)
	defer cancel()
	m, err := s.nc.RequestWithContext(rctx, "$JS.API.STREAM.MSG.GET."+s.stream.CachedInfo().Config.Name, body)
	if err != nil {
		return nil, s.unavailable(ctx, err)
	}
	var resp struct {
		Message *storedMsg       `json:"message"`
		Error   *natsjs.APIError `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return nil, err
	}
	switch {
	case resp.Error != nil && resp.Error.ErrorCode == natsjs.JSErrCodeMessageNotFound:
		return nil, nil
	case resp.Error != nil:
		return nil, s.unavailable(ctx, resp.Error) // a 503 is unavailable
	case resp.Message == nil:
		return nil, errors.New("the server answered no message")
	}
	return resp.Message, nil
}

// checkEmpty tells a replica that found no key matching filters from one
// that is behind: it asks the leader for the last message of each filter.
// Any message, a deletion's too, means the replica is behind (one that had
// it would have answered it) or a commit landed since; either way the
// read is tried again. A read of patterns alone needs this as much
// as one of a literal key: a fresh instance's pending items, listed right
// after their commit through another server, came back empty 2 runs of 3
// under -race when only literal keys were checked.
func (s *jsStore) checkEmpty(ctx context.Context, filters []string) error {
	for _, f := range filters {
		if m, err := s.leaderLast(ctx, s.subject+f); err != nil || m != nil {
			return cmp.Or(err, errBehind)
		}
	}
	return nil
}

// errBehind is snapshotGet's error when the replica that answered had not
// reached the sequence the read must see.
var errBehind = errors.New("the replica that answered is behind its leader")

// directGet is a direct get request of the last messages of subjects.
type directGet struct {
	MultiLast []string `json:"multi_last"`
}

// snapshotGet is one try of snapshot: the direct get of filters' keys
// from a replica that must have reached sequence floor.
func (s *jsStore) snapshotGet(ctx context.Context, filters []string, floor uint64, f func(key string, value []byte) error) error {
	req := directGet{}
	for _, k := range filters {
		req.MultiLast = append(req.MultiLast, s.subject+k)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	inbox := s.nc.NewRespInbox()
	// Room for every answer the server sends (at most 1,024 values and
	// the end): a subscription's default buffer is 512 KB.
	answers := make(chan *nats.Msg, 1026)
	sub, err := s.nc.ChanSubscribe(inbox, answers)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	if err := s.nc.PublishRequest("$JS.API.DIRECT.GET."+s.stream.CachedInfo().Config.Name, inbox, body); err != nil {
		return s.unavailable(ctx, err)
	}
	rctx, cancel := s.request(ctx)
	defer cancel()
	type kv struct {
		key   string
		value []byte
	}
	var got []kv
	for {
		var m *nats.Msg
		select {
		case m = <-answers:
		case <-rctx.Done():
			return cmp.Or(ctx.Err(), s.unavailable(ctx, rctx.Err()))
		}
		switch status := m.Header.Get("Status"); status {
		case "":
			if m.Header.Get("KV-Operation") != "" {
				continue // a deletion or purge: the key is gone
			}
			got = append(got, kv{strings.TrimPrefix(m.Header.Get("Nats-Subject"), s.subject), m.Data})
		case "204": // the end of the batch: every value is in
			if up, _ := strconv.ParseUint(m.Header.Get("Nats-UpTo-Sequence"), 10, 64); up < floor {
				return errBehind
			}
			for _, e := range got {
				v := e.value
				if v == nil {
					v = []byte{}
				}
				if err := f(e.key, v); err != nil {
					return err
				}
			}
			return nil
		case "404":
			if floor > 0 {
				return s.checkEmpty(ctx, filters)
			}
			return nil // no key matches
		case "413":
			return errTooManyKeys
		case "503":
			return errNoResponders
		default:
			return fmt.Errorf("read %s: the server answered %s %s", strings.Join(filters, ", "), status, m.Header.Get("Description"))
		}
	}
}

// LoadMeta implements [store.Store.LoadMeta].
func (s *jsStore) LoadMeta(ctx context.Context, agent, key string) (store.Meta, bool, error) {
	v, found, err := s.get(ctx, jsMetaKey(agent, key))
	if err != nil || !found {
		if err != nil {
			err = fmt.Errorf("store: load agent %q instance %q meta: %w", agent, key, err)
		}
		return store.Meta{}, false, err
	}
	var m store.Meta
	if err := json.Unmarshal(v, &m); err != nil {
		return store.Meta{}, false, fmt.Errorf("store: load agent %q instance %q meta: corrupt value: %w", agent, key, err)
	}
	return m, true, nil
}

// batch is the messages of one atomic commit.
type batch struct {
	s    *jsStore
	msgs []*nats.Msg
	err  error
}

// put adds the value v of key, which is what ("record 7", "the meta").
func (b *batch) put(key, what string, v []byte) {
	if b.err == nil && int64(len(v)) > b.s.maxPayload-512 { // the headers take some of it
		b.err = fmt.Errorf("%s is %d bytes encoded, more than the NATS server takes in one message (%d)", what, len(v), b.s.maxPayload)
	}
	b.msgs = append(b.msgs, &nats.Msg{Subject: b.s.subject + key, Data: v, Header: nats.Header{}})
}

func (b *batch) putJSON(key, what string, v any) {
	data, err := json.Marshal(v)
	if err != nil && b.err == nil {
		b.err = fmt.Errorf("encode %s: %w", what, err)
	}
	b.put(key, what, data)
}

func (b *batch) del(key string) {
	b.msgs = append(b.msgs, &nats.Msg{Subject: b.s.subject + key, Header: nats.Header{"KV-Operation": []string{"DEL"}}})
}

// pubAck is the server's answer to a batch's commit.
type pubAck struct {
	Seq   uint64 `json:"seq"`
	Count int    `json:"count"`
	Error *struct {
		Code        int    `json:"code"`
		ErrCode     int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error"`
}

// errTooManyBatches is the server's answer when the stream has as many
// batches in flight as it takes; the commit is tried again.
const errTooManyBatches = 10211

// commit publishes the batch atomically: all its messages are stored, or
// none. When its last request gets no answer in time, its error matches
// ErrOutcomeUnknown: the server may have stored it.
func (b *batch) commit(ctx context.Context) error {
	if b.err != nil {
		return b.err
	}
	if len(b.msgs) == 0 {
		return nil
	}
	deadline := time.Now().Add(maxSnapshotWait)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		err := b.publish(ctx)
		var ae *apiError
		busy := errors.As(err, &ae) && (ae.errCode == errTooManyBatches || ae.errCode == errSubjectInFlight)
		// No responders: the stream has no leader for a moment (it was
		// just created, or its leader moved); a new batch is tried.
		leaderless := errors.Is(err, nats.ErrNoResponders)
		if leaderless && time.Now().After(deadline) {
			return b.s.unavailable(ctx, err)
		}
		if !busy && !leaderless {
			return err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return err
		}
	}
}

type apiError struct {
	errCode int
	msg     string
}

func (e *apiError) Error() string { return e.msg }

func (b *batch) publish(ctx context.Context) error {
	id := nuid.Next()
	last := len(b.msgs) - 1
	for i, m := range b.msgs {
		if last > 0 {
			// One message is atomic as it is; a batch costs the server a
			// store of its own for the messages it stages (on file
			// storage, BENCHMARKS.md).
			m.Header.Set("Nats-Batch-Id", id)
			m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(i+1))
		}
		if i < last {
			if err := b.s.nc.PublishMsg(m); err != nil {
				return err
			}
			continue
		}
		if last > 0 {
			m.Header.Set("Nats-Batch-Commit", "1")
		}
		rctx, cancel := b.s.request(ctx)
		resp, err := b.s.nc.RequestMsgWithContext(rctx, m)
		cancel()
		switch {
		case err == nil:
		case ctx.Err() == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)):
			// The batch went out and its answer did not come back: the
			// server may have stored it, or a server may yet do so.
			return &unavailableError{msg: fmt.Sprintf("the server did not answer within %s; the batch may or may not be stored", b.s.timeout), unknown: true, err: err}
		case ctx.Err() == nil && errors.Is(err, context.Canceled):
			return &unavailableError{msg: errReconnected + "; the batch may or may not be stored", unknown: true, err: err}
		case errors.Is(err, nats.ErrNoResponders):
			return err // no stream took it: commit tries again
		default:
			return b.s.unavailable(ctx, err)
		}
		var ack pubAck
		if err := json.Unmarshal(resp.Data, &ack); err != nil {
			return fmt.Errorf("the server's answer to a commit: %w", err)
		}
		if ack.Error != nil {
			err := &apiError{errCode: ack.Error.ErrCode, msg: fmt.Sprintf("the server refused the batch of %d messages: %s (error %d)", len(b.msgs), ack.Error.Description, ack.Error.ErrCode)}
			if ack.Error.Code == 503 { // refused for now: nothing written
				return &unavailableError{msg: "the server cannot take the batch for now", err: err}
			}
			return err
		}
		if last > 0 && ack.Count != len(b.msgs) {
			return fmt.Errorf("the server stored %d of the batch's %d messages", ack.Count, len(b.msgs))
		}
	}
	return nil
}

// Commit implements [store.Store.Commit], in one atomic batch.
func (s *jsStore) Commit(ctx context.Context, agent, key string, b store.Batch) error {
	if b.Empty() {
		return nil
	}
	bt := &batch{s: s}
	// Put before Delete, the later of two puts at one Seq wins: the
	// stream keeps the last message of each key.
	for i := range b.Put {
		bt.putJSON(jsMessageKey(agent, key, b.Put[i].Seq), "record "+strconv.FormatUint(b.Put[i].Seq, 10), &b.Put[i])
	}
	for _, seq := range b.Delete {
		bt.del(jsMessageKey(agent, key, seq))
	}
	if b.Meta != nil {
		bt.putJSON(jsMetaKey(agent, key), "the meta", b.Meta)
	}
	for ext, v := range b.State {
		if v == nil {
			bt.del(jsStateKey(agent, key, ext))
		} else {
			bt.put(jsStateKey(agent, key, ext), fmt.Sprintf("the state of extension %q", ext), bytes.Clone(v))
		}
	}
	for i := range b.Pending {
		if err := s.putIndexed(ctx, bt, pendingKind, &b.Pending[i]); err != nil {
			return fmt.Errorf("store: commit agent %q instance %q: nothing written: %w", agent, key, err)
		}
	}
	for _, id := range b.DeleteTasks {
		if err := s.delIndexed(ctx, bt, taskKind, id); err != nil {
			return fmt.Errorf("store: commit agent %q instance %q: nothing written: %w", agent, key, err)
		}
	}
	for i := range b.Tasks {
		if err := s.putIndexed(ctx, bt, taskKind, (*store.PendingRecord)(&b.Tasks[i])); err != nil {
			return fmt.Errorf("store: commit agent %q instance %q: nothing written: %w", agent, key, err)
		}
	}
	if b.Fence != 0 {
		bt.fenced(agent, key, b.Fence)
	}
	if err := bt.commit(ctx); err != nil {
		if b.Fence != 0 && isWrongLast(err) {
			return store.Fenced(agent, key, b.Fence)
		}
		if errors.Is(err, store.ErrOutcomeUnknown) {
			return fmt.Errorf("store: commit agent %q instance %q: %w", agent, key, err)
		}
		return fmt.Errorf("store: commit agent %q instance %q: nothing written: %w", agent, key, err)
	}
	return nil
}

// Instances implements [store.Store.Instances]: the instances with meta,
// records or state, not those with secrets alone.
func (s *jsStore) Instances(ctx context.Context, agent string) ([]string, error) {
	a := enc(agent)
	seen := map[string]bool{}
	for _, filter := range []string{"meta." + a + ".*", "msg." + a + ".*.*", "state." + a + ".*.*"} {
		keys, err := s.keys(ctx, filter)
		if err != nil {
			return nil, fmt.Errorf("store: instances of agent %q: %w", agent, err)
		}
		for _, k := range keys {
			seen[strings.Split(k, ".")[2]] = true
		}
	}
	var out []string
	for token := range seen {
		k, err := dec(token)
		if err != nil {
			return nil, fmt.Errorf("store: instances of agent %q: %w %q", agent, errBadKey, token)
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return out, nil
}

func jsStateKey(agent, key, extension string) string {
	return jsInstance("state", agent, key) + "." + enc(extension)
}

// GetState implements [store.Store.GetState].
func (s *jsStore) GetState(ctx context.Context, agent, key, extension string) ([]byte, error) {
	v, _, err := s.get(ctx, jsStateKey(agent, key, extension))
	if err != nil {
		return nil, fmt.Errorf("store: get state of %q for agent %q instance %q: %w", extension, agent, key, err)
	}
	return v, nil
}

func jsSecretKey(agent, key, name string) string {
	return jsInstance("secret", agent, key) + "." + enc(name)
}

// PutSecret implements [store.Store.PutSecret].
func (s *jsStore) PutSecret(ctx context.Context, agent, key, name string, sealed []byte) error {
	bt := &batch{s: s}
	bt.put(jsSecretKey(agent, key, name), "the sealed value", bytes.Clone(sealed))
	if err := bt.commit(ctx); err != nil {
		return fmt.Errorf("store: put secret %q for agent %q instance %q: %w", name, agent, key, err)
	}
	return nil
}

// GetSecret implements [store.Store.GetSecret].
func (s *jsStore) GetSecret(ctx context.Context, agent, key, name string) ([]byte, bool, error) {
	v, found, err := s.get(ctx, jsSecretKey(agent, key, name))
	if err != nil {
		return nil, false, fmt.Errorf("store: get secret %q for agent %q instance %q: %w", name, agent, key, err)
	}
	return v, found, nil
}

// ListSecrets implements [store.Store.ListSecrets].
func (s *jsStore) ListSecrets(ctx context.Context, agent, key string) ([]string, error) {
	// Read like a snapshot, in one direct get: a listing through a watch
	// makes a consumer, through the cluster's meta leader, and this one
	// runs at each load of an instance.
	var keys []string
	err := s.snapshot(ctx, []string{jsInstance("secret", agent, key) + ".*"}, true, func(k string, _ []byte) error {
		keys = append(keys, k)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: list secrets of agent %q instance %q: %w", agent, key, err)
	}
	var out []string
	for _, k := range keys {
		name, err := dec(k[strings.LastIndexByte(k, '.')+1:])
		if err != nil {
			return nil, fmt.Errorf("store: list secrets of agent %q instance %q: %w %q", agent, key, errBadKey, k)
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out, nil
}
