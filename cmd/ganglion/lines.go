package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// maxLineSize is the longest line, in bytes without its line end, that an
// interactive run reads as a message or an answer: 1 MiB.
const maxLineSize = 1 << 20

// lineReader reads the lines of an interactive run, as a [bufio.Scanner]
// with [bufio.ScanLines] would, but a line over [maxLineSize] does not end
// the session: lineReader reads the rest of it without keeping it, says on
// stderr that it refused the line and why, and goes on with the next line.
// It holds no more than maxLineSize bytes of a line, however long.
//
// A lineReader is not safe for concurrent use.
type lineReader struct {
	r      *bufio.Reader
	stderr io.Writer
	line   []byte
	done   bool  // input ended or failed
	err    error // how it failed; nil at its end
}

func newLineReader(r io.Reader, stderr io.Writer) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), stderr: stderr}
}

// Scan reads the next line, skipping lines over the limit; it returns false
// when input ends or fails ([lineReader.Err] says which).
func (l *lineReader) Scan() bool {
	for !l.done {
		line, n, some, err := l.read()
		if err != nil {
			l.done = true
			if !errors.Is(err, io.EOF) {
				l.err = err
				return false
			}
			if !some {
				return false
			}
			// The last line has no line end.
		}
		if n > maxLineSize {
			fmt.Fprintf(l.stderr, "ganglion: line of %d bytes refused: over the limit of %d bytes (1 MiB); send a shorter one\n", n, maxLineSize)
			continue
		}
		l.line = line
		return true
	}
	return false
}

// read reads one line and returns it without its line end ("\n", "\r\n",
// or a "\r" that ends input), and its length n. Of a line longer than
// maxLineSize it keeps nothing, and line is nil. some says whether it read
// anything; err is io.EOF when input ended before a "\n".
func (l *lineReader) read() (line []byte, n int, some bool, err error) {
	var b1, b2 byte // the last two bytes read, b2 the last
	keep := true
	for {
		chunk, err := l.r.ReadSlice('\n')
		n += len(chunk)
		switch len(chunk) {
		case 0:
		case 1:
			b1, b2 = b2, chunk[0]
		default:
			b1, b2 = chunk[len(chunk)-2], chunk[len(chunk)-1]
		}
		if keep {
			line = append(line, chunk...)
			if len(line) > maxLineSize+2 { // longer than any line end explains
				line, keep = nil, false
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		end := 0
		switch {
		case err == nil && n >= 2 && b1 == '\r':
			end = 2
		case err == nil, n >= 1 && b2 == '\r':
			end = 1
		}
		some, n = n > 0, n-end
		if keep {
			line = line[:n]
		}
		return line, n, some, err
	}
}

// Text returns the line the last Scan read, without its line end.
func (l *lineReader) Text() string { return string(l.line) }

// Err returns the error that ended Scan, or nil if input simply ended.
func (l *lineReader) Err() error { return l.err }
