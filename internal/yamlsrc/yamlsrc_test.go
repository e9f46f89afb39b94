package yamlsrc

import (
	"strings"
	"testing"
)

func TestSnippet(t *testing.T) {
	lines := Lines([]byte("a: 1\nb:\n\t- x\nc: 3\nd: 4\ne: 5\n"))
	tests := []struct {
		name      string
		line, col int
		want      string
	}{
		{"middle", 4, 4, "   1 | a: 1\n   2 | b:\n   3 | \t- x\n>  4 | c: 3\n          ^\n   5 | d: 4\n   6 | e: 5"},
		{"first line", 1, 1, ">  1 | a: 1\n       ^\n   2 | b:\n   3 | \t- x\n   4 | c: 3"},
		{"tab before the column", 3, 3, "   1 | a: 1\n   2 | b:\n>  3 | \t- x\n       \t ^\n   4 | c: 3\n   5 | d: 4\n   6 | e: 5"},
		{"column past the end", 2, 6, "   1 | a: 1\n>  2 | b:\n            ^\n   3 | \t- x\n   4 | c: 3\n   5 | d: 4"},
		{"no such line", 99, 1, ""},
		{"line zero", 0, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Snippet(lines, tt.line, tt.col); got != tt.want {
				t.Errorf("Snippet(%d, %d) =\n%s\nwant:\n%s", tt.line, tt.col, got, tt.want)
			}
		})
	}
}

// TestSnippetLongLines checks that a line longer than snippetWidth is cut to
// a window around the column, and that the caret stays under it.
func TestSnippetLongLines(t *testing.T) {
	long := strings.Repeat("a", 100) + "é" + strings.Repeat("b", 200) + "X" + strings.Repeat("c", 300)
	lines := Lines([]byte("short\n" + long + "\n" + strings.Repeat("d", 170) + "\n"))
	tests := []struct {
		name      string
		line, col int
		want      string
	}{
		{
			name: "near the start",
			line: 2, col: 3,
			want: "   1 | short\n" +
				">  2 | " + strings.Repeat("a", 100) + "é" + strings.Repeat("b", 59) + "…\n" +
				"         ^\n" +
				"   3 | " + strings.Repeat("d", 160) + "…",
		},
		{
			name: "in the middle",
			line: 2, col: 302, // the X
			want: "   1 | short\n" +
				">  2 | …" + strings.Repeat("b", 80) + "X" + strings.Repeat("c", 79) + "…\n" +
				"       " + strings.Repeat(" ", 81) + "^\n" +
				"   3 | …" + strings.Repeat("d", 160),
		},
		{
			name: "near the end",
			line: 2, col: 600,
			want: "   1 | short\n" +
				">  2 | …" + strings.Repeat("c", 160) + "\n" +
				"       " + strings.Repeat(" ", 158) + "^\n" +
				"   3 | …" + strings.Repeat("d", 160),
		},
		{
			name: "a short line between long ones",
			line: 1, col: 2,
			want: ">  1 | short\n" +
				"        ^\n" +
				"   2 | " + strings.Repeat("a", 100) + "é" + strings.Repeat("b", 59) + "…\n" +
				"   3 | " + strings.Repeat("d", 160) + "…",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Snippet(lines, tt.line, tt.col); got != tt.want {
				t.Errorf("Snippet(%d, %d) =\n%s\nwant:\n%s", tt.line, tt.col, got, tt.want)
			}
		})
	}
}
