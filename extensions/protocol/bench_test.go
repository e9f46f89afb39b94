package protocol_test

import (
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions/protocol"
)

// proseLines are ordinary model output: markdown with links, references,
// brackets, lists and code.
var proseLines = []string{
	"Here is what I found after reading the repository and its tests.",
	"The parser lives in [parser.go](https://example.com/repo/blob/main/parser.go) and is small.",
	"",
	"- It reads the input line by line; see [the docs][1] for the format.",
	"- Arrays are written as `[a, b]` and maps as `{k: v}`.",
	"[Note] the cache is warmed at start-up, which takes a second or two.",
	"  [x] done: the tests pass on Linux and macOS",
	"```go",
	"for i := range items[1:] { total += items[i] }",
	"```",
	"[1]: https://example.com/docs/format",
	"Next I will change the error messages so that they name the line and column.",
	"그리고 한국어 문장도 조금 섞여 있습니다 — 괄호 [참고] 와 함께.",
}

// prose returns about n bytes of ordinary output.
func prose(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(proseLines[i%len(proseLines)])
		b.WriteByte('\n')
	}
	return b.String()
}

// withBlocks returns about n bytes of output with a block every ~1 KiB.
func withBlocks(n int) (string, int) {
	blocks := []string{validQ, validD,
		"[PHASE_COMPLETE]\nphase: build\nsummary: The parser is done.\n  Tests pass.\nartifacts:\n  - extensions/protocol/scanner.go\n  - extensions/protocol/doc.go\n[/PHASE_COMPLETE]\n"}
	para := prose(800)
	var b strings.Builder
	count := 0
	for i := 0; b.Len() < n; i++ {
		b.WriteString(para)
		b.WriteString(blocks[i%len(blocks)])
		count++
	}
	return b.String(), count
}

// BenchmarkProtocolScan measures the scanner's throughput.
//
//	go test -run XXX -bench ProtocolScan -benchmem ./extensions/protocol/
//
// no_blocks feeds 1 MiB of prose at once (as Parse does); the _chunks
// variants feed it as a stream of small chunks, paying one Feed call (and one
// event slice) per chunk. with_blocks shows time linear in the input.
func BenchmarkProtocolScan(b *testing.B) {
	reg := protocol.DefaultRegistry()
	text := prose(1 << 20)
	b.Run("no_blocks", func(b *testing.B) { benchScan(b, reg, text, len(text), 0) })
	b.Run("no_blocks_4KiB_chunks", func(b *testing.B) { benchScan(b, reg, text, 4<<10, 0) })
	b.Run("no_blocks_16B_chunks", func(b *testing.B) { benchScan(b, reg, text, 16, 0) })
	for _, size := range []struct {
		name string
		n    int
	}{{"64KiB", 64 << 10}, {"1MiB", 1 << 20}, {"4MiB", 4 << 20}} {
		in, blocks := withBlocks(size.n)
		b.Run("with_blocks/"+size.name, func(b *testing.B) { benchScan(b, reg, in, len(in), blocks) })
	}
}

func benchScan(b *testing.B, reg *protocol.Registry, in string, chunk, wantBlocks int) {
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	s := protocol.NewScanner(reg)
	for b.Loop() {
		blocks := 0
		for i := 0; i < len(in); i += chunk {
			for _, e := range s.Feed(in[i:min(i+chunk, len(in))]) {
				if e.Block != nil {
					blocks++
				} else if e.Err != nil {
					b.Fatal(e.Err)
				}
			}
		}
		s.Close()
		if blocks != wantBlocks {
			b.Fatalf("%d blocks, want %d", blocks, wantBlocks)
		}
	}
}
