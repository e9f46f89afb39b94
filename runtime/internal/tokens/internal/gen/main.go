// Command gen writes the vocabularies package tokens embeds, read out of
// github.com/tiktoken-go/tokenizer, which only this program and the
// package's tests link. Run it from the package's directory, as
// go generate does:
//
//	go run ./internal/gen
//
// Each file, data/<encoding>.bin.gz, is gzip-compressed: the number of
// token IDs as a uvarint, then, for each ID from 0, the length of its
// token's bytes as a uvarint and the bytes. A length of 0 marks an ID with
// no token. The output depends on nothing but the library's vocabulary,
// so a run writes the same bytes as the last.
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tiktoken-go/tokenizer"
)

// encodings are the vocabularies package tokens counts with.
var encodings = []tokenizer.Encoding{tokenizer.Cl100kBase, tokenizer.O200kBase}

func main() {
	dir := flag.String("dir", "data", "the directory to write the files to")
	flag.Parse()
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	for _, enc := range encodings {
		data, err := generate(enc)
		if err == nil {
			err = os.WriteFile(filepath.Join(*dir, string(enc)+".bin.gz"), data, 0o644)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "gen: %s: %v\n", enc, err)
			os.Exit(1)
		}
	}
}

// generate returns the compressed file of enc's vocabulary.
func generate(enc tokenizer.Encoding) ([]byte, error) {
	raw, err := serialize(enc)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	zw, err := gzip.NewWriterLevel(&out, gzip.BestCompression) // no name, no time: the same bytes each run
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// serialize returns enc's vocabulary uncompressed. The library does not
// export its table, so it decodes each token ID in turn: the IDs are
// dense, and past the last one every decode fails (its special tokens,
// which a text never counts as, decode to nothing).
func serialize(enc tokenizer.Encoding) ([]byte, error) {
	codec, err := tokenizer.Get(enc)
	if err != nil {
		return nil, err
	}
	var toks []string
	for id, misses := uint(0), 0; misses < 1024; id++ {
		tok, err := codec.Decode([]uint{id})
		if err != nil || tok == "" {
			misses++
			toks = append(toks, "")
			continue
		}
		misses = 0
		toks = append(toks, tok)
	}
	for len(toks) > 0 && toks[len(toks)-1] == "" {
		toks = toks[:len(toks)-1]
	}
	raw := binary.AppendUvarint(nil, uint64(len(toks)))
	for _, tok := range toks {
		raw = binary.AppendUvarint(raw, uint64(len(tok)))
		raw = append(raw, tok...)
	}
	return raw, nil
}
