package tokens

import (
	"compress/gzip"
	_ "embed" // the vocabularies
	"encoding/binary"
	"io"
	"strconv"
	"strings"
)

//go:generate go run ./internal/gen

// The vocabularies, as internal/gen writes them from
// github.com/tiktoken-go/tokenizer: gzip-compressed, the number of token
// IDs as a uvarint, then each ID's token from 0, its length as a uvarint
// and its bytes; a length of 0 marks an ID with no token.
var (
	//go:embed data/cl100k_base.bin.gz
	cl100kData string
	//go:embed data/o200k_base.bin.gz
	o200kData string
)

// readRanks decodes the vocabulary data of the encoding name. The data is
// compiled in, so an error is a defect of the build, and panics.
func readRanks(name, data string) ranks {
	fail := func(what string) ranks {
		panic("tokens: the embedded vocabulary " + name + ": " + what)
	}
	zr, err := gzip.NewReader(strings.NewReader(data))
	if err != nil {
		return fail(err.Error())
	}
	var b strings.Builder
	if len(data) >= 4 {
		b.Grow(int(binary.LittleEndian.Uint32([]byte(data[len(data)-4:])))) // gzip ends with the length, modulo 2³²
	}
	if _, err := io.Copy(&b, zr); err != nil { // to the end, which checks the checksum
		return fail(err.Error())
	}
	// Each token is a substring of s: one allocation for all their bytes.
	s := b.String()
	n, i := uvarint(s, 0)
	if i < 0 || n >= 1<<31 {
		return fail("bad count of token IDs")
	}
	r := make(ranks, n)
	for id := range int32(n) {
		size, j := uvarint(s, i)
		if j < 0 || size > uint64(len(s)-j) {
			return fail("token " + strconv.Itoa(int(id)) + " runs past the end")
		}
		if size > 0 {
			r[s[j:j+int(size)]] = id
		}
		i = j + int(size)
	}
	if i != len(s) {
		return fail(strconv.Itoa(len(s)-i) + " bytes past the last token")
	}
	return r
}

// uvarint decodes the uvarint at s[i:] and returns it and the index past
// it, or -1 for the index if s[i:] holds none.
func uvarint(s string, i int) (uint64, int) {
	var x uint64
	for shift := uint(0); i < len(s) && shift < 64; shift += 7 {
		c := s[i]
		i++
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return x, i
		}
	}
	return 0, -1
}
