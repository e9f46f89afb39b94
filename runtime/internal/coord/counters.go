package coord

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ganglion-dev/ganglion/internal/jsopen"
	"github.com/ganglion-dev/ganglion/store"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Counters are integers that every process adds to, kept in a JetStream
// stream that does the additions on the server (NATS server 2.12
// counters): a counter is a subject, and an addition is a message whose
// Nats-Incr header the stream's leader adds to the subject's last value,
// answering with the sum. So concurrent additions neither retry nor lose
// one another, unlike a read and a compare-and-set.
type Counters struct {
	nc      *nats.Conn
	stream  jetstream.Stream
	subject string // prefix of every counter's subject, with its dot
}

// OpenCounters returns the counters of stream name, which it creates with
// replicas copies (0: 1) if it does not exist ([jsopen.Stream]). A counter
// nothing was added to for maxAge is forgotten (reads zero again).
func OpenCounters(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, name string, replicas int, maxAge time.Duration) (*Counters, error) {
	stream, err := jsopen.Stream(ctx, js, jetstream.StreamConfig{
		Name: name, Description: "Ganglion's shared counters", Subjects: []string{name + ".>"},
		Storage: jetstream.FileStorage, Replicas: max(replicas, 1), MaxAge: maxAge,
		// Each message holds the counter's value: the last is all there
		// is to keep.
		MaxMsgsPerSubject: 1, AllowMsgCounter: true,
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: open counters %q (NATS server 2.12 or later): %w", name, err)
	}
	return &Counters{nc: nc, stream: stream, subject: name + "."}, nil
}

func (c *Counters) subjectOf(key, field string) string {
	return c.subject + base64.RawURLEncoding.EncodeToString([]byte(key)) + "." + field
}

// counterAck is the server's answer to an addition.
type counterAck struct {
	Value string `json:"val"`
	Error *struct {
		Code        int    `json:"code"`
		Description string `json:"description"`
	} `json:"error"`
}

// Add adds delta to field of key's counters and returns its new value.
func (c *Counters) Add(ctx context.Context, key, field string, delta int64) (int64, error) {
	m := nats.NewMsg(c.subjectOf(key, field))
	m.Header.Set("Nats-Incr", strconv.FormatInt(delta, 10))
	var resp *nats.Msg
	err := retry(ctx, false, func(cctx context.Context) (err error) {
		resp, err = c.nc.RequestMsgWithContext(cctx, m)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("cluster: add %d to counter %s of %q: %w", delta, field, key, Unavailable(ctx, err))
	}
	var ack counterAck
	if err := json.Unmarshal(resp.Data, &ack); err != nil {
		return 0, fmt.Errorf("cluster: add %d to counter %s of %q: the server's answer: %w", delta, field, key, err)
	}
	if ack.Error != nil && ack.Error.Code == 503 {
		// No leader for the stream, or it cannot serve for now.
		return 0, fmt.Errorf("cluster: add %d to counter %s of %q: the server cannot now: %s (%w)", delta, field, key, ack.Error.Description, store.ErrUnavailable)
	}
	if ack.Error != nil {
		return 0, fmt.Errorf("cluster: add %d to counter %s of %q: the server refused it: %s", delta, field, key, ack.Error.Description)
	}
	return parseCounter(ack.Value, field, key)
}

// Get returns the value of field of key's counters, zero if nothing was
// added to it. It reads from the stream's leader, which has applied every
// addition that was answered.
func (c *Counters) Get(ctx context.Context, key, field string) (int64, error) {
	cctx, cancel := bound(ctx)
	defer cancel()
	msg, err := c.stream.GetLastMsgForSubject(cctx, c.subjectOf(key, field))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("cluster: read counter %s of %q: %w", field, key, Unavailable(ctx, err))
	}
	var v struct {
		Value string `json:"val"`
	}
	if err := json.Unmarshal(msg.Data, &v); err != nil {
		return 0, fmt.Errorf("cluster: read counter %s of %q: %w", field, key, err)
	}
	return parseCounter(v.Value, field, key)
}

// Forget deletes every counter of key.
func (c *Counters) Forget(ctx context.Context, key string) error {
	cctx, cancel := bound(ctx)
	defer cancel()
	if err := c.stream.Purge(cctx, jetstream.WithPurgeSubject(c.subjectOf(key, ">"))); err != nil {
		return fmt.Errorf("cluster: forget the counters of %q: %w", key, Unavailable(ctx, err))
	}
	return nil
}

func parseCounter(v, field, key string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cluster: counter %s of %q holds %q, not a 64-bit integer", field, key, v)
	}
	return n, nil
}
