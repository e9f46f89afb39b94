package yamlsrc

import (
	"fmt"
	"strconv"
	"strings"
)

// ContextLines is how many lines before and after the error line a snippet shows.
const ContextLines = 3

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
	first := max(1, line-ContextLines)
	last := min(len(lines), line+ContextLines)
	width := max(2, len(strconv.Itoa(last)))
	var b strings.Builder
	for n := first; n <= last; n++ {
		mark := " "
		if n == line {
			mark = ">"
		}
		prefix := fmt.Sprintf("%s %*d | ", mark, width, n)
		text := lines[n-1]
		if n > first {
			b.WriteByte('\n')
		}
		b.WriteString(strings.TrimRight(prefix+text, " \t"))
		if n == line {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat(" ", len(prefix)))
			b.WriteString(caretPad(text, col))
			b.WriteByte('^')
		}
	}
	return b.String()
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
