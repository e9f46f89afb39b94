package protocol_test

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ganglion-dev/ganglion/extensions/protocol"
)

// FuzzScanner checks, for any input, that the scanner does not panic; that
// the text events, block texts and failed-block texts, in order, rebuild the
// input exactly (so the pass-through text is the input minus the blocks);
// and that feeding the input in chunks cut anywhere gives the same events
// as feeding it at once, with whole characters in every text event when
// the input is valid UTF-8. cuts are the lengths of successive chunks; small
// sets a 64-byte block limit.
//
//	go test -run XXX -fuzz FuzzScanner ./extensions/protocol/
func FuzzScanner(f *testing.F) {
	seeds := []string{
		"",
		"plain prose\nwith [brackets] and a [link](http://x).\n",
		validQ,
		validD,
		response,
		validQ + "between\n" + validD + "after",
		"[USER_QUESTION]\ncategory: choice\nquestion: Q?\n[/USER_QUESTION]",
		"[PHASE_COMPLETE]\nphase: p\nsummary: s\nartifacts:\n - a\n - b\n[/PHASE_COMPLETE]\n",
		// Malformed.
		"[USER_QUESTION]\ncategory: biz\nquestoin: x\nrequired: maybe\noptions: [a, \"b\n[/USER_QUESTION]\n",
		"[USER_QUESTION]\ncategory: choice\n[DEPENDENCY_REQUEST]\ntype: file\n",
		"[USER_QUESTION]\n[/DEPENDENCY_REQUEST]\n[/USER_QUESTION]\n[/PHASE_COMPLETE]",
		"[USER_QUESTION]",
		"  [USER_QUESTION] \r\n\r\n[/USER_QUESTION]\r\n",
		"[USER_QUESTION\n[/USER_QUESTION\n[]\n[/]\n[A]\n",
		// Unicode and bytes that are not UTF-8.
		"질문:\n[USER_QUESTION]\ncategory: business\nquestion: 어떤 모델? 🎉\noptions: [구독, \"광고, 기반\"]\n[/USER_QUESTION]\n",
		"\xff\xfe[USER_QUESTION]\n\xe2\x82\n[/USER_QUESTION]\n\xf0\x9f",
		// Huge lines.
		strings.Repeat("x", 100_000) + "\n[USER_QUESTION]\n",
		strings.Repeat(" ", 300) + "[USER_QUESTION]\n",
		"[PHASE_COMPLETE]\nphase: p\nsummary: " + strings.Repeat("long ", 20_000) + "\n[/PHASE_COMPLETE]\n[/PHASE_COMPLETE]\n",
	}
	for _, s := range seeds {
		f.Add(s, []byte{}, false)
		f.Add(s, []byte{1, 7, 0, 3, 200, 13}, false)
		f.Add(s, []byte{5, 60, 2}, true)
	}
	reg := protocol.DefaultRegistry()
	f.Fuzz(func(t *testing.T, in string, cuts []byte, small bool) {
		var opts []protocol.Option
		if small {
			opts = append(opts, protocol.MaxBlockSize(64))
		}
		raw := scanRaw(reg, in, nil, opts...)
		whole := merge(raw)
		if got := rebuild(whole); got != in {
			t.Fatalf("rebuilt input differs:\n got %q\nwant %q", got, in)
		}
		for _, e := range raw {
			switch {
			case e.Block != nil:
				b := e.Block
				if b.StartLine < 1 || b.EndLine <= b.StartLine || b.Raw == "" || b.Value == nil {
					t.Fatalf("bad block %+v", b)
				}
			case e.Err != nil:
				r := e.Err
				if r.Msg == "" || r.Raw == "" || r.Line < r.StartLine || r.Line > r.EndLine {
					t.Fatalf("bad error %+v", r)
				}
			case e.Text == "":
				t.Fatal("empty text event")
			}
		}

		var offsets []int
		pos := 0
		for _, c := range cuts {
			if pos += int(c); pos > len(in) {
				break
			}
			offsets = append(offsets, pos)
		}
		split := scanRaw(reg, in, offsets, opts...)
		for _, e := range split {
			if e.Block == nil && e.Err == nil && e.Text == "" {
				t.Fatal("empty text event")
			}
			// Valid input gives whole characters in every piece.
			if utf8.ValidString(in) && (!utf8.ValidString(e.Text) || e.Err != nil && !utf8.ValidString(e.Err.Raw)) {
				t.Fatalf("chunks cut at %v: event %+v splits a character", offsets, e)
			}
		}
		if split := merge(split); !reflect.DeepEqual(split, whole) {
			t.Fatalf("chunks cut at %v give:\n%s\nwhole input gives:\n%s", offsets, render(split), render(whole))
		}
	})
}
