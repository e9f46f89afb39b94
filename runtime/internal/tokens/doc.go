// Package tokens counts the tokens of a text as OpenAI's byte-pair
// encodings do (cl100k_base, o200k_base), exactly, and fast: it splits the
// text into the encoding's pieces itself, and byte-pair encodes each
// distinct piece once, keeping the piece's count in a bounded cache. Words
// repeat, so most pieces are counted by a map lookup.
//
// The vocabularies are embedded data (data/*.bin.gz), decoded at an
// encoding's first count. internal/gen writes them from
// github.com/tiktoken-go/tokenizer, which only it and the tests link, so
// the package links the standard library alone; go generate writes them
// again, and the tests check them against the library token by token.
package tokens
