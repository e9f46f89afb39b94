package yamlsrc

import "testing"

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
