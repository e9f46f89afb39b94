package yamlsrc

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// contextLines is how many lines before and after the error line a snippet shows.
const contextLines = 3

// snippetWidth is how many characters of a line a snippet shows. Of a longer
// line it shows a window around the column, with "…" where it cuts, so that
// an error in a file of one huge line stays readable.
const snippetWidth = 160

// Lines splits a file into lines without their line ends, as [Snippet]
// wants them.
func Lines(src []byte) []string {
	lines := strings.Split(strings.TrimSuffix(string(src), "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// Snippet renders lines around line (1-based) with a caret under col
// (1-based, in characters); "" if line is not in the file.
//
//	   5 | agents:
//	   6 |   - name: helper
//	>  7 |     tools: [read_file, reed_file]
//	                              ^
//	   8 |     extensions: [{name: audit}]
func Snippet(lines []string, line, col int) string {
	if line < 1 || line > len(lines) {
		return ""
	}
	first := max(1, line-contextLines)
	last := min(len(lines), line+contextLines)
	width := max(2, len(strconv.Itoa(last)))
	start := windowStart(lines[line-1], col)
	var b strings.Builder
	for n := first; n <= last; n++ {
		mark := " "
		if n == line {
			mark = ">"
		}
		prefix := fmt.Sprintf("%s %*d | ", mark, width, n)
		text, shift := clip(lines[n-1], start)
		if n > first {
			b.WriteByte('\n')
		}
		b.WriteString(strings.TrimRight(prefix+text, " \t"))
		if n == line {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat(" ", len(prefix)))
			b.WriteString(caretPad(text, col-start+shift))
			b.WriteByte('^')
		}
	}
	return b.String()
}

// windowStart returns the index of the first character of text a snippet
// shows so that column col is in view: 0 unless text is longer than
// [snippetWidth].
func windowStart(text string, col int) int {
	if len(text) <= snippetWidth {
		return 0 // no more characters than bytes
	}
	n := utf8.RuneCountInString(text)
	if n <= snippetWidth {
		return 0
	}
	return max(0, min(col-1-snippetWidth/2, n-snippetWidth))
}

// clip returns text whole if it is no longer than [snippetWidth]
// characters, else the snippetWidth characters from character start, with
// "…" where it cuts; and how many characters it put before them (1 for a
// "…", else 0).
func clip(text string, start int) (string, int) {
	if len(text) <= snippetWidth {
		return text, 0
	}
	r := []rune(text)
	if len(r) <= snippetWidth {
		return text, 0
	}
	start = min(start, len(r)-snippetWidth)
	var b strings.Builder
	shift := 0
	if start > 0 {
		b.WriteString("…")
		shift = 1
	}
	end := start + snippetWidth
	b.WriteString(string(r[start:end]))
	if end < len(r) {
		b.WriteString("…")
	}
	return b.String(), shift
}

// caretPad returns the blanks that put a caret under column col of text:
// a tab for each tab of text (so the caret lines up however tabs render)
// and a space for anything else.
func caretPad(text string, col int) string {
	var b strings.Builder
	n := 0
	for _, r := range text {
		if n >= col-1 {
			break
		}
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
		n++
	}
	for ; n < col-1; n++ {
		b.WriteByte(' ')
	}
	return b.String()
}
