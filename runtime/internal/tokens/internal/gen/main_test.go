package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestFilesAreGenerated: the committed files hold what the generator
// writes from the library's vocabulary, byte for byte. A toolchain whose
// compressor writes other bytes for the same content is logged, not
// failed: the content is what package tokens reads.
func TestFilesAreGenerated(t *testing.T) {
	for _, enc := range encodings {
		path := filepath.Join("..", "..", "data", string(enc)+".bin.gz")
		committed, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		generated, err := generate(enc)
		if err != nil {
			t.Fatalf("%s: %v", enc, err)
		}
		if bytes.Equal(committed, generated) {
			continue
		}
		want, err := serialize(enc)
		if err != nil {
			t.Fatalf("%s: %v", enc, err)
		}
		zr, err := gzip.NewReader(bytes.NewReader(committed))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		got, err := io.ReadAll(zr)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s holds %d bytes that differ from the library's vocabulary (%d bytes): run go generate in runtime/internal/tokens", path, len(got), len(want))
			continue
		}
		t.Logf("%s: the content is the library's, compressed to other bytes by this toolchain (%d generated, %d committed)", path, len(generated), len(committed))
	}
}
