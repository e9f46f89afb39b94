package coord

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/ganglion-dev/ganglion/internal/jsopen"
	"github.com/ganglion-dev/ganglion/store"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// Waits is the wait-for graph of the whole cluster: an edge from one
// instance to another says that a turn of the first waits for a turn of
// the second (an agent request). Each edge is a key of a key-value
// bucket, "w.<from>.<id>" holding the target, with a time to live, so that
// a process that dies does not leave its edges behind.
type Waits struct {
	nc     *nats.Conn
	kv     jetstream.KeyValue
	stream string // the bucket's stream, for direct gets
	prefix string // of a key's subject
}

// maxWaitNodes bounds how many instances a path search visits.
const maxWaitNodes = 1024

// OpenWaits returns the wait-for graph in bucket, which it creates if it
// does not exist ([jsopen.KeyValue]): in memory, on one server. An edge
// lives as long as an agent request, and a server that restarts loses
// only the edges of the requests then waiting, whose cycles, if any, end
// at their timeouts as they would without the graph; replicating every
// edge would cost each request a consensus round for that.
func OpenWaits(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, bucket string) (*Waits, error) {
	kv, _, err := jsopen.KeyValue(ctx, js, jetstream.KeyValueConfig{
		Bucket: bucket, Description: "Ganglion's wait-for graph of agent calls", History: 1,
		Storage: jetstream.MemoryStorage, Replicas: 1,
		LimitMarkerTTL: time.Second, // lets edges carry a TTL
	})
	if err != nil {
		return nil, fmt.Errorf("cluster: open wait-for bucket %q: %w", bucket, err)
	}
	return &Waits{nc: nc, kv: kv, stream: "KV_" + bucket, prefix: "$KV." + bucket + "."}, nil
}

func waitKeys(from string) string {
	return "w." + base64.RawURLEncoding.EncodeToString([]byte(from))
}

// Add records that from waits for to, for at most ttl (whole seconds, at
// least one); remove takes the edge away.
func (w *Waits) Add(ctx context.Context, from, to string, ttl time.Duration) (remove func(context.Context) error, err error) {
	key := waitKeys(from) + "." + nuid.Next()
	cctx, cancel := bound(ctx)
	defer cancel()
	if _, err := w.kv.Create(cctx, key, []byte(to), jetstream.KeyTTL(max(ttl.Truncate(time.Second)+time.Second, minTTL))); err != nil {
		return nil, fmt.Errorf("cluster: record that %s waits for %s: %w", from, to, Unavailable(ctx, err))
	}
	return func(ctx context.Context) error {
		cctx, cancel := bound(ctx)
		defer cancel()
		return Unavailable(ctx, w.kv.Purge(cctx, key))
	}, nil
}

// Path returns the instances from "from" to "to" along the graph's edges,
// both included, or nil if to is not reached.
func (w *Waits) Path(ctx context.Context, from, to string) ([]string, error) {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 && len(prev) < maxWaitNodes {
		n := queue[0]
		queue = queue[1:]
		if n == to {
			var path []string
			for ; n != ""; n = prev[n] {
				path = append(path, n)
			}
			slices.Reverse(path)
			return path, nil
		}
		next, err := w.edges(ctx, n)
		if err != nil {
			return nil, err
		}
		for _, m := range next {
			if _, seen := prev[m]; !seen {
				prev[m] = n
				queue = append(queue, m)
			}
		}
	}
	return nil, nil
}

// edges returns whom from waits for, in one direct get of the last value
// of each of its keys.
func (w *Waits) edges(ctx context.Context, from string) ([]string, error) {
	body, err := json.Marshal(struct {
		MultiLast []string `json:"multi_last"`
	}{[]string{w.prefix + waitKeys(from) + ".*"}})
	if err != nil {
		return nil, err
	}
	inbox := w.nc.NewRespInbox()
	// A batched direct get answers at most 1,024 messages, then its end.
	answers := make(chan *nats.Msg, 1026)
	sub, err := w.nc.ChanSubscribe(inbox, answers)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	if err := w.nc.PublishRequest("$JS.API.DIRECT.GET."+w.stream, inbox, body); err != nil {
		return nil, fmt.Errorf("cluster: read whom %s waits for: %w", from, Unavailable(ctx, err))
	}
	rctx, cancel := bound(ctx)
	defer cancel()
	var out []string
	for {
		select {
		case m := <-answers:
			switch status := m.Header.Get("Status"); status {
			case "":
				if m.Header.Get("KV-Operation") == "" { // not a deletion
					out = append(out, string(m.Data))
				}
			case "204", "404": // the end, or no edge
				return out, nil
			case "503": // no responders: the bucket's server is down
				return nil, fmt.Errorf("cluster: read whom %s waits for: the server answered %s %s (%w)", from, status, m.Header.Get("Description"), store.ErrUnavailable)
			default:
				return nil, fmt.Errorf("cluster: read whom %s waits for: the server answered %s %s", from, status, m.Header.Get("Description"))
			}
		case <-rctx.Done():
			return nil, fmt.Errorf("cluster: read whom %s waits for: %w", from, Unavailable(ctx, rctx.Err()))
		}
	}
}
