package ganglion

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"unicode"
)

// Logger returns a logger that writes to the host's log through the log
// import: the host's logger adds the time, the agent and the extension's
// name, and filters by level. A record's attributes are appended to its
// message as key=value. [API].Logger is one; Logger serves code that runs
// before setup (an init function).
func Logger() *slog.Logger { return slog.New(&logHandler{}) }

// logHandler renders a record as one line of text for the log import.
type logHandler struct {
	attrs  string // rendered attributes of WithAttrs, with a leading space each
	prefix string // group prefix, "g." for WithGroup("g")
}

func (h *logHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *logHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	b.WriteString(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		appendAttr(&b, h.prefix, a)
		return true
	})
	host.log(int32(r.Level), b.String())
	return nil
}

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.attrs)
	for _, a := range as {
		appendAttr(&b, h.prefix, a)
	}
	return &logHandler{attrs: b.String(), prefix: h.prefix}
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &logHandler{attrs: h.attrs, prefix: h.prefix + name + "."}
}

// appendAttr writes " key=value", groups flattened to "group.key".
func appendAttr(b *strings.Builder, prefix string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, g := range a.Value.Group() {
			appendAttr(b, p, g)
		}
		return
	}
	b.WriteByte(' ')
	b.WriteString(prefix)
	b.WriteString(a.Key)
	b.WriteByte('=')
	s := a.Value.String()
	if needsQuote(s) {
		s = strconv.Quote(s)
	}
	b.WriteString(s)
}

func needsQuote(s string) bool {
	if s == "" {
		return true
	}
	for _, r := range s {
		if unicode.IsSpace(r) || r == '"' || r == '=' || !unicode.IsPrint(r) {
			return true
		}
	}
	return false
}
