// Package tokens counts the tokens of a text as OpenAI's byte-pair
// encodings do (cl100k_base, o200k_base), exactly, and fast: it splits the
// text into the encoding's pieces itself, and byte-pair encodes each
// distinct piece once, through github.com/tiktoken-go/tokenizer, keeping
// the piece's count in a bounded cache. Words repeat, so most pieces are
// counted by a map lookup.
package tokens
