package server

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/pipeline"
)

// Webhook is a URL that receives notifications of what happens to the
// agents: a pending item created ("pending.created") or resolved
// ("pending.resolved"), a root task answered ("task.answered"), a turn
// failed ("turn.failed").
//
// Each notification is a POST of {"type", "timestamp", "data"} signed as
// Standard Webhooks say: the headers webhook-id (the same for every try
// of one notification), webhook-timestamp and webhook-signature
// ("v1,<base64 HMAC-SHA256 of id.timestamp.body>" under Secret). A
// receiver answers 2xx to take it; anything else, or no answer within 10
// s, is tried again later, with a growing wait (1 s, 2 s, 4 s ... up to
// an hour, 20 tries). A redirect (3xx) is not followed, not even to the
// same host: it is a failed try, logged with its Location, for the
// notification and its signature go only to the URL configured.
type Webhook struct {
	URL string
	// Secret signs the notifications: the bytes of "whsec_<base64>", or
	// any other text as it is.
	Secret string
	// Events are the notification types the URL wants; none: all four.
	Events []string
}

// WithWebhooks sends notifications to hooks, from an outbox kept in the
// directory dir (created if missing): a notification is written there
// before it is sent and deleted once taken, so a restart sends what a stop
// left unsent; a notification taken is remembered, so that one event is
// sent once, also when the runtime publishes it again after a restart.
func WithWebhooks(dir string, hooks ...Webhook) Option {
	return func(s *Server) {
		s.hooks = &outbox{dir: dir, hooks: hooks, logger: s.logger, now: time.Now, base: time.Second,
			hc: &http.Client{Timeout: 10 * time.Second, CheckRedirect: noRedirects}, wake: make(chan struct{}, 1)}
	}
}

// maxTries bounds the tries of one notification.
const maxTries = 20

// outbox delivers the notifications of the webhooks.
type outbox struct {
	dir    string
	hooks  []Webhook
	logger *slog.Logger
	now    func() time.Time
	base   time.Duration // the first retry's wait
	hc     *http.Client
	wake   chan struct{}
	queue  chan events.Event // from the bus to the writer: never blocks a turn
	mu     sync.Mutex        // guards writing the outbox, and seq
	seq    int64
	stop   context.CancelFunc
	done   sync.WaitGroup
}

// delivery is one notification to one URL, as the outbox keeps it.
type delivery struct {
	ID    string          `json:"id"`
	URL   string          `json:"url"`
	Type  string          `json:"type"`
	Body  json.RawMessage `json:"body"`
	Tries int             `json:"tries"`
	Next  time.Time       `json:"next"`
	// Seq orders the notifications as their events came: they are sent
	// in that order when due together.
	Seq int64 `json:"seq"`
}

// start opens the outbox and runs its goroutines until close.
func (o *outbox) start(logger *slog.Logger) error {
	o.logger = logger
	for _, d := range []string{o.dir, filepath.Join(o.dir, "sent"), filepath.Join(o.dir, "failed")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("webhook outbox: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	o.stop = cancel
	o.queue = make(chan events.Event, 4096)
	o.done.Add(2)
	go o.write(ctx)
	go o.send(ctx)
	return nil
}

func (o *outbox) close() {
	if o.stop != nil {
		o.stop()
		o.done.Wait()
	}
}

// event takes an event of the bus: a quick hand-over, or a logged drop
// when the writer is that far behind.
func (o *outbox) event(ev events.Event) {
	if ev.Process != "" {
		return // another process of the cluster notifies its own events
	}
	if notification(ev) == "" {
		return
	}
	select {
	case o.queue <- ev:
	default:
		o.logger.Error("webhook notification dropped: the outbox writer is 4096 events behind", "topic", ev.Topic, "agent", ev.Agent)
	}
}

// notification is the notification type of ev, "" for none.
func notification(ev events.Event) string {
	switch {
	case ev.Topic == "pending.created":
		return "pending.created"
	case strings.HasPrefix(ev.Topic, "pending.") && ev.Topic != "pending.resumed":
		return "pending.resolved"
	case ev.Topic == events.TaskAnswered:
		return "task.answered"
	case ev.Topic == events.TurnFinished:
		if d, ok := ev.Data.(events.TurnFinishedData); ok && d.FinishReason == pipeline.FinishError {
			return "turn.failed"
		}
	}
	return ""
}

// eventID names an event for its notifications: the same event gets the
// same ID, also when the runtime publishes it again after a restart.
func eventID(kind string, ev events.Event) string {
	var what string
	switch d := ev.Data.(type) {
	case events.TaskAnsweredData:
		what = d.TaskID
	case events.TurnFinishedData:
		what = ev.Agent + "/" + ev.Instance + "/" + ev.TurnID
	default:
		// A pending item: its ID and, resolved, its status.
		b, _ := json.Marshal(ev.Data)
		var it struct{ ID, Status string }
		_ = json.Unmarshal(b, &it)
		what = it.ID + "/" + it.Status
	}
	sum := sha256.Sum256([]byte(kind + "\x00" + what))
	return "evt_" + hex.EncodeToString(sum[:12])
}

// write puts the notifications of each queued event in the outbox.
func (o *outbox) write(ctx context.Context) {
	defer o.done.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-o.queue:
			if err := o.put(ev); err != nil {
				o.logger.Error("webhook notification not written to the outbox", "topic", ev.Topic, "err", err)
			}
		}
	}
}

// put writes ev's notification for every hook that wants it, unless it was
// written or sent already.
func (o *outbox) put(ev events.Event) error {
	kind := notification(ev)
	id := eventID(kind, ev)
	body, err := json.Marshal(map[string]any{"type": kind, "timestamp": ev.Time.UTC().Format(time.RFC3339Nano),
		"data": map[string]any{"agent": ev.Agent, "instance": ev.Instance, "turn_id": ev.TurnID, "event": ev.Data}})
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, h := range o.hooks {
		if len(h.Events) > 0 && !slices.Contains(h.Events, kind) {
			continue
		}
		name := deliveryName(i, h.URL, id)
		if exists(filepath.Join(o.dir, "sent", name)) || exists(filepath.Join(o.dir, name+".json")) {
			continue // once per event
		}
		o.seq++
		// Microseconds leave room for the counter that orders the
		// notifications of one microsecond (nanoseconds shifted would
		// overflow).
		d := delivery{ID: id, URL: h.URL, Type: kind, Body: body, Next: o.now(), Seq: o.now().UnixMicro()<<8 | o.seq&0xff}
		if err := writeFile(filepath.Join(o.dir, name+".json"), d); err != nil {
			return err
		}
	}
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return nil
}

// deliveryName names the outbox file of event id for hook i.
func deliveryName(i int, url, id string) string {
	sum := sha256.Sum256([]byte(url))
	return id + "-" + hex.EncodeToString(sum[:4]) + "-" + strconv.Itoa(i)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// writeFile writes v as JSON to path, atomically.
func writeFile(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// send delivers what the outbox holds, when each is due.
func (o *outbox) send(ctx context.Context) {
	defer o.done.Done()
	for {
		next := o.deliverDue(ctx)
		wait := time.Hour
		if !next.IsZero() {
			wait = max(next.Sub(o.now()), 0)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-o.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// deliverDue tries every due delivery once, and returns when the next is
// due (zero: none left).
func (o *outbox) deliverDue(ctx context.Context) time.Time {
	entries, err := os.ReadDir(o.dir)
	if err != nil {
		o.logger.Error("webhook outbox unreadable", "err", err)
		return o.now().Add(time.Minute)
	}
	type entry struct {
		name, file string
		d          delivery
	}
	var todo []entry
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() {
			continue
		}
		path := filepath.Join(o.dir, e.Name())
		var d delivery
		b, err := os.ReadFile(path)
		if err == nil {
			err = json.Unmarshal(b, &d)
		}
		if err != nil {
			o.logger.Error("webhook outbox entry unreadable; moved aside", "file", path, "err", err)
			os.Rename(path, filepath.Join(o.dir, "failed", e.Name()))
			continue
		}
		todo = append(todo, entry{name, e.Name(), d})
	}
	slices.SortFunc(todo, func(a, b entry) int { return cmp.Compare(a.d.Seq, b.d.Seq) })
	var next time.Time
	for _, t := range todo {
		name, d, path := t.name, t.d, filepath.Join(o.dir, t.file)
		h, ok := o.hook(d.URL)
		if !ok {
			o.logger.Warn("webhook URL no longer configured; its notification is dropped", "url", d.URL, "id", d.ID)
			os.Remove(path)
			continue
		}
		if d.Next.After(o.now()) {
			if next.IsZero() || d.Next.Before(next) {
				next = d.Next
			}
			continue
		}
		if ctx.Err() != nil {
			return next
		}
		err = o.post(ctx, h, d)
		o.mu.Lock()
		switch {
		case err == nil:
			// Sent: remembered, so that the same event is not sent again.
			os.WriteFile(filepath.Join(o.dir, "sent", name), nil, 0o600)
			os.Remove(path)
		case d.Tries+1 >= maxTries:
			o.logger.Error("webhook notification given up after its last try", "url", d.URL, "id", d.ID, "tries", d.Tries+1, "err", err)
			os.Rename(path, filepath.Join(o.dir, "failed", t.file))
		default:
			d.Tries++
			wait := min(o.base<<min(d.Tries-1, 30), time.Hour)
			wait += time.Duration(rand.Int64N(int64(wait)/4 + 1)) // jitter: receivers back up together otherwise
			d.Next = o.now().Add(wait)
			o.logger.Warn("webhook notification not taken; tried again later", "url", d.URL, "id", d.ID, "tries", d.Tries, "in", wait.Round(time.Millisecond), "err", err)
			if werr := writeFile(path, d); werr != nil {
				o.logger.Error("webhook outbox entry not updated", "file", path, "err", werr)
			}
			if next.IsZero() || d.Next.Before(next) {
				next = d.Next
			}
		}
		o.mu.Unlock()
	}
	return next
}

func (o *outbox) hook(url string) (Webhook, bool) {
	for _, h := range o.hooks {
		if h.URL == url {
			return h, true
		}
	}
	return Webhook{}, false
}

// post sends d, signed with h's secret.
func (o *outbox) post(ctx context.Context, h Webhook, d delivery) error {
	ts := strconv.FormatInt(o.now().Unix(), 10)
	req, err := http.NewRequestWithContext(ctx, "POST", h.URL, bytes.NewReader(d.Body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "ganglion-webhooks")
	req.Header.Set("webhook-id", d.ID)
	req.Header.Set("webhook-timestamp", ts)
	req.Header.Set("webhook-signature", "v1,"+sign(h.Secret, d.ID, ts, d.Body))
	res, err := o.hc.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	switch {
	case 300 <= res.StatusCode && res.StatusCode <= 399:
		return fmt.Errorf("the receiver answered %s, to %s: notifications do not follow redirects; configure the URL it points to", res.Status, res.Header.Get("Location"))
	case res.StatusCode < 200 || res.StatusCode > 299:
		return fmt.Errorf("the receiver answered %s", res.Status)
	}
	return nil
}

// noRedirects makes the webhooks' client return a redirect as the answer:
// following it would hand the signed notification, its webhook-id and
// its signature, to whatever host the receiver names.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// sign is the Standard Webhooks signature of a notification.
func sign(secret, id, ts string, body []byte) string {
	key := []byte(secret)
	if b64, ok := strings.CutPrefix(secret, "whsec_"); ok {
		if k, err := base64.StdEncoding.DecodeString(b64); err == nil {
			key = k
		}
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}
