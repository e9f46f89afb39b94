package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// refused is what lineReader says of a refused line of n bytes.
func refused(n int) string {
	return fmt.Sprintf("ganglion: line of %d bytes refused: over the limit of 1048576 bytes (1 MiB); send a shorter one\n", n)
}

// repeatReader yields n copies of b, then the reader after it, without
// holding them in memory.
type repeatReader struct {
	b    byte
	n    int
	then io.Reader
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return r.then.Read(p)
	}
	k := min(len(p), r.n)
	for i := range k {
		p[i] = r.b
	}
	r.n -= k
	return k, nil
}

// errReader yields its data, then fails.
type errReader struct{ data string }

func (r *errReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, errors.New("disk on fire")
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", maxLineSize+1)
	tests := []struct {
		name    string
		in      io.Reader
		want    []string
		stderr  string
		wantErr string
	}{
		{name: "empty", in: strings.NewReader("")},
		{name: "lines", in: strings.NewReader("a\nb c\n"), want: []string{"a", "b c"}},
		{name: "no last line end", in: strings.NewReader("a\nb"), want: []string{"a", "b"}},
		{name: "crlf", in: strings.NewReader("a\r\nb\r"), want: []string{"a", "b"}},
		{name: "empty lines", in: strings.NewReader("\n\r\n\n"), want: []string{"", "", ""}},
		{name: "at the limit", in: strings.NewReader(long[1:] + "\r\nok\n"), want: []string{long[1:], "ok"}},
		{name: "over the limit", in: strings.NewReader("a\n" + long + "\nok\n"), want: []string{"a", "ok"}, stderr: refused(maxLineSize + 1)},
		{name: "over the limit with crlf", in: strings.NewReader(long + "\r\nok"), want: []string{"ok"}, stderr: refused(maxLineSize + 1)},
		{name: "over the limit at the end", in: strings.NewReader("a\n" + long), want: []string{"a"}, stderr: refused(maxLineSize + 1)},
		{name: "two over the limit", in: strings.NewReader(long + "\n" + long + "x\nok\n"), want: []string{"ok"}, stderr: refused(maxLineSize+1) + refused(maxLineSize+2)},
		{
			name:   "far over the limit",
			in:     &repeatReader{b: 'y', n: 50 << 20, then: strings.NewReader("\nok\n")},
			want:   []string{"ok"},
			stderr: refused(50 << 20),
		},
		{name: "read error", in: &errReader{"a\nb"}, want: []string{"a"}, wantErr: "disk on fire"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			l := newLineReader(tt.in, &stderr)
			var got []string
			for l.Scan() {
				got = append(got, l.Text())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("lines = %.40q, want %.40q", got, tt.want)
			}
			if stderr.String() != tt.stderr {
				t.Errorf("stderr = %q, want %q", stderr.String(), tt.stderr)
			}
			gotErr := ""
			if err := l.Err(); err != nil {
				gotErr = err.Error()
			}
			if gotErr != tt.wantErr {
				t.Errorf("Err() = %q, want %q", gotErr, tt.wantErr)
			}
			if l.Scan() {
				t.Errorf("Scan after the end returned a line: %.40q", l.Text())
			}
		})
	}
}

// TestRunRefusesLongLine: an interactive run refuses a line over 1 MiB,
// says so, and answers the next line.
func TestRunRefusesLongLine(t *testing.T) {
	dir := project(t, testConfig)
	data := filepath.Join(t.TempDir(), "data")
	long := strings.Repeat("x", maxLineSize+1)
	r := runCLI(t, long+"\nhello\n", "run", dir, "--data", data)
	check(t, "long line, then hello", r, exitOK, ptr("echo hello\n"), ptr(refused(maxLineSize+1)), "")
}

// TestRunRefusesLongAnswer: at the prompt of a paused run, a line over the
// limit is refused too, and the next line is the answer.
func TestRunRefusesLongAnswer(t *testing.T) {
	t.Parallel()
	dir := pendingProject(t)
	long := strings.Repeat("x", maxLineSize+1)
	r := runCLI(t, "first message\n"+long+"\nfreemium\n", "run", dir, "--agent", "asker")
	it := onlyItem(t, dir, "--all")
	check(t, "long answer, then freemium", r, exitOK, ptr(askText+askResumed),
		ptr("[paused] $ID question: What pricing model? [Subscription | Freemium | Ad-based] (default: Freemium)\nanswer (empty line skips): "+refused(maxLineSize+1)), it.ID)
	if it.Status != "answered" {
		t.Errorf("afterwards the item is %s, want answered", it.Status)
	}
}
