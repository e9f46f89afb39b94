package protocol_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions/protocol"
)

const (
	validQ = "[USER_QUESTION]\ncategory: choice\nquestion: Which?\noptions: [a, b]\n[/USER_QUESTION]\n"
	validD = "[DEPENDENCY_REQUEST]\ntype: api_key\nname: KEY\ndescription: for tests\n[/DEPENDENCY_REQUEST]\n"
)

// TestScannerEvents checks what is text, what is a block and what is an
// error, with exact messages.
func TestScannerEvents(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // render of the events
	}{
		{"plain text", "hello\nworld", "text: \"hello\\nworld\"\n"},
		{"empty", "", ""},
		{"one block between text", "before\n" + validQ + "after\n",
			"text: \"before\\n\"\n" +
				"block USER_QUESTION 2-6: &{Category:choice Question:Which? Options:[a b] Default: Required:false}\n" +
				"text: \"after\\n\"\n"},
		{"tags with blanks around them", "  [USER_QUESTION]\t\ncategory: choice\nquestion: Q?\n\t[/USER_QUESTION]  \r\n",
			"block USER_QUESTION 1-4: &{Category:choice Question:Q? Options:[] Default: Required:false}\n"},
		{"closing tag at the end without a newline", "[USER_QUESTION]\ncategory: choice\nquestion: Q?\n[/USER_QUESTION]",
			"block USER_QUESTION 1-4: &{Category:choice Question:Q? Options:[] Default: Required:false}\n"},
		{"a tag in prose is text", "Write [USER_QUESTION] then fields.\n[USER_QUESTION] is the tag\n",
			"text: \"Write [USER_QUESTION] then fields.\\n[USER_QUESTION] is the tag\\n\"\n"},
		{"unregistered and lowercase tags are text", "[NOTE]\ncategory: x\n[/NOTE]\n[user_question]\n[/user_question]\n",
			"text: \"[NOTE]\\ncategory: x\\n[/NOTE]\\n[user_question]\\n[/user_question]\\n\"\n"},
		{"markdown links are text", "[link](http://x)\n[A]: http://x\n[ ]\n[]\n[/]\n",
			"text: \"[link](http://x)\\n[A]: http://x\\n[ ]\\n[]\\n[/]\\n\"\n"},
		{"two blocks back to back", validD + validQ,
			"block DEPENDENCY_REQUEST 1-5: &{Type:api_key Name:KEY Description:for tests Required:false}\n" +
				"block USER_QUESTION 6-10: &{Category:choice Question:Which? Options:[a b] Default: Required:false}\n"},
		{"never closed", "hi\n[DEPENDENCY_REQUEST]\ntype: api_key\n",
			"text: \"hi\\n\"\n" +
				"error DEPENDENCY_REQUEST 2 (2-3): [DEPENDENCY_REQUEST] opened at line 2 is never closed\n"},
		{"opening tag as the last line", "hi\n[USER_QUESTION]",
			"text: \"hi\\n\"\n" +
				"error USER_QUESTION 2 (2-2): [USER_QUESTION] opened at line 2 is never closed\n"},
		{"closing tag not alone on its line", "[USER_QUESTION]\ncategory: choice\nquestion: Q?\n[/USER_QUESTION] thanks\n",
			"error USER_QUESTION 1 (1-4): [USER_QUESTION] opened at line 1 is never closed\n"},
		{"a new block before the closing tag", "[USER_QUESTION]\ncategory: choice\n" + validD,
			"error USER_QUESTION 1 (1-2): [USER_QUESTION] opened at line 1 is never closed\n" +
				"block DEPENDENCY_REQUEST 3-7: &{Type:api_key Name:KEY Description:for tests Required:false}\n"},
		{"closing tag of another kind", "[USER_QUESTION]\ncategory: choice\nquestion: Q?\n[/DEPENDENCY_REQUEST]\nafter\n",
			"error USER_QUESTION 4 (1-4): line 4: [/DEPENDENCY_REQUEST] does not close [USER_QUESTION] opened at line 1\n" +
				"text: \"after\\n\"\n"},
		{"stray closing tag", "text\n[/USER_QUESTION]\nmore\n",
			"text: \"text\\n\"\n" +
				"error USER_QUESTION 2 (2-2): line 2: [/USER_QUESTION] has no matching [USER_QUESTION] above it\n" +
				"text: \"more\\n\"\n"},
		{"stray closing tag at the end", "text\n[/USER_QUESTION]",
			"text: \"text\\n\"\n" +
				"error USER_QUESTION 2 (2-2): line 2: [/USER_QUESTION] has no matching [USER_QUESTION] above it\n"},
		{"an invalid block yields errors, not a block", "a\n[USER_QUESTION]\ncategory: biz\nquestion: Q?\n[/USER_QUESTION]\nb\n",
			"text: \"a\\n\"\n" +
				"error USER_QUESTION 3 (2-5): line 3: unknown category \"biz\" (want business, clarification, choice or confirmation)\n" +
				"text: \"b\\n\"\n"},
		{"a tag line longer than 256 bytes is text", strings.Repeat(" ", 250) + "[USER_QUESTION]\n",
			"text: \"" + strings.Repeat(" ", 250) + "[USER_QUESTION]\\n\"\n"},
		{"a tag line of 256 bytes is a tag", strings.Repeat(" ", 241) + "[USER_QUESTION]\n",
			"error USER_QUESTION 1 (1-1): [USER_QUESTION] opened at line 1 is never closed\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs := scanAll(protocol.DefaultRegistry(), tt.in, nil)
			if got := render(evs); got != tt.want {
				t.Errorf("events:\n%s\nwant:\n%s", got, tt.want)
			}
			if got := rebuild(evs); got != tt.in {
				t.Errorf("rebuilt input %q, want %q", got, tt.in)
			}
		})
	}
}

// TestScannerBriefMessages pins the messages the design brief gives as
// examples.
func TestScannerBriefMessages(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"missing field", "\n\n[USER_QUESTION]\ncategory: choice\n[/USER_QUESTION]\n",
			`line 3: [USER_QUESTION] is missing the required field "question"`},
		{"never closed", "1\n2\n3\n4\n5\n6\n[DEPENDENCY_REQUEST]\ntype: file\n",
			`[DEPENDENCY_REQUEST] opened at line 7 is never closed`},
		{"unknown category", "\n[USER_QUESTION]\nquestion: Q?\ncategory: biz\n[/USER_QUESTION]\n",
			`line 4: unknown category "biz" (want business, clarification, choice or confirmation)`},
		{"unknown field", "[USER_QUESTION]\ncategory: choice\nquestion: Q?\n\nquestoin: Q?\n[/USER_QUESTION]\n",
			`line 5: unknown field "questoin" in [USER_QUESTION] (known: category, question, options, default, required)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := errorTexts(scanAll(protocol.DefaultRegistry(), tt.in, nil))
			if len(got) != 1 || got[0] != tt.want {
				t.Errorf("errors %q, want [%q]", got, tt.want)
			}
		})
	}
}

// TestScannerHoldsBackOnlyPossibleTags checks that text is emitted as soon as
// it cannot start a tag line.
func TestScannerHoldsBackOnlyPossibleTags(t *testing.T) {
	tests := []struct {
		chunks []string
		want   []string // text emitted by each Feed, then by Close
	}{
		{[]string{"hello wor", "ld\n"}, []string{"hello wor", "ld\n", ""}},
		{[]string{"text\n  [USER_QU", "ESTION] is a tag\n"}, []string{"text\n", "  [USER_QUESTION] is a tag\n", ""}},
		{[]string{"a\n[", "link](x)"}, []string{"a\n", "[link](x)", ""}},
		{[]string{"a\n[NOT_A_KIND]", "\nb"}, []string{"a\n", "[NOT_A_KIND]\nb", ""}},
		{[]string{"a\n   ", "   ", "x"}, []string{"a\n", "", "      x", ""}},
		{[]string{"a\n[NOT_A_KIND]"}, []string{"a\n", "[NOT_A_KIND]"}},
		// An incomplete UTF-8 sequence waits for its end.
		{[]string{"한\xea", "\xb8\x80", "!"}, []string{"한", "글", "!", ""}},
		{[]string{"a\xff"}, []string{"a\xff", ""}},
		{[]string{"\xe2\x82"}, []string{"", "\xe2\x82"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.chunks), func(t *testing.T) {
			s := protocol.NewScanner(protocol.DefaultRegistry())
			var got []string
			for _, c := range tt.chunks {
				got = append(got, text(s.Feed(c)))
			}
			got = append(got, text(s.Close()))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func text(evs []protocol.Event) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Block != nil || e.Err != nil {
			b.WriteString("<event>")
		}
		if e.Text == "" && e.Block == nil && e.Err == nil {
			b.WriteString("<empty text event>")
		}
		b.WriteString(e.Text)
	}
	return b.String()
}

// response holds two blocks (one valid, one not) and text around and
// between them, with multi-byte characters.
const response = "Let me check one thing — 잠깐만요.\n" +
	"  [USER_QUESTION]  \r\n" +
	"category: business\n" +
	"question: 어떤 수익 모델을\n  선호하시나요? [USER_QUESTION] is mentioned: here\n" +
	"options:\n - 구독 (월/연간)\n - Freemium\n" +
	"default: freemium\n" +
	"[/USER_QUESTION]\n" +
	"Between the blocks, a [link](http://x) and [/USER_QUESTION] in prose.\n" +
	"[DEPENDENCY_REQUEST]\n" +
	"type: api_key\nname: OPENAI API KEY\ndescription: needed\n" +
	"[/DEPENDENCY_REQUEST]\n" +
	"Thanks! 🎉"

// twoValid holds two valid blocks and text around and between them.
const twoValid = "Before — 먼저.\n" + validQ + "between [USER_QUESTION] and\n  \n" + validD + "after 🎉"

// TestScannerSplitPoints feeds responses cut at every byte offset, in two
// chunks and in three, and one byte at a time: the events are the same.
func TestScannerSplitPoints(t *testing.T) {
	reg := protocol.DefaultRegistry()
	tests := []struct {
		name string
		in   string
		want string // the kinds of events: t(ext), b(lock), e(rror)
	}{
		{"a valid and an invalid block", response, "tbtet"},
		{"two valid blocks", twoValid, "tbtbt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := scanAll(reg, tt.in, nil)
			if got := shape(want); got != tt.want {
				t.Fatalf("events %s, want %s:\n%s", got, tt.want, render(want))
			}
			if got := rebuild(want); got != tt.in {
				t.Fatalf("rebuilt %q", got)
			}
			check := func(name string, cuts []int) {
				t.Helper()
				if got := scanAll(reg, tt.in, cuts); !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: events:\n%s\nwant:\n%s", name, render(got), render(want))
				}
			}
			for i := 0; i <= len(tt.in); i++ {
				check(fmt.Sprintf("cut at %d", i), []int{i})
			}
			for i := 0; i <= len(tt.in); i += 7 {
				for j := i; j <= len(tt.in); j += 5 {
					check(fmt.Sprintf("cuts at %d, %d", i, j), []int{i, j})
				}
			}
			bytewise := make([]int, len(tt.in))
			for i := range bytewise {
				bytewise[i] = i
			}
			check("one byte at a time", bytewise)
		})
	}
}

// shape returns one letter per event: t, b or e.
func shape(evs []protocol.Event) string {
	var b strings.Builder
	for _, e := range evs {
		switch {
		case e.Block != nil:
			b.WriteByte('b')
		case e.Err != nil:
			b.WriteByte('e')
		default:
			b.WriteByte('t')
		}
	}
	return b.String()
}

func TestScannerBlockSizeLimit(t *testing.T) {
	reg := protocol.DefaultRegistry()
	body := strings.Repeat("word ", 30) // 150 bytes
	in := "before\n[USER_QUESTION]\ncategory: choice\nquestion: " + body + "\n" + body + "\n[/USER_QUESTION]\nafter\n"
	// The block's first 200 bytes end 6 bytes into line 5; the rest is text.
	want := "text: \"before\\n\"\n" +
		"error USER_QUESTION 2 (2-5): [USER_QUESTION] opened at line 2 is longer than 200 bytes\n" +
		fmt.Sprintf("text: %q\n", in[len("before\n")+200:])
	for _, cuts := range [][]int{nil, {30}, {100}, {200}, {206}, {207}, {208}, {206, 207}, {240}} {
		evs := scanAll(reg, in, cuts, protocol.MaxBlockSize(200))
		if got := render(evs); got != want {
			t.Errorf("cuts %v: events:\n%s\nwant:\n%s", cuts, got, want)
		}
		if got := rebuild(evs); got != in {
			t.Errorf("cuts %v: rebuilt %q", cuts, got)
		}
	}

	// The default limit is 64 KiB, tags included.
	fill := func(n int) string {
		return "[PHASE_COMPLETE]\nphase: p\nsummary: " + strings.Repeat("x", n) + "\n[/PHASE_COMPLETE]\n"
	}
	exact := fill(protocol.DefaultMaxBlockSize - len(fill(0)))
	if blocks, errs := protocol.Parse(reg, exact); len(blocks) != 1 || len(errs) != 0 {
		t.Errorf("block of exactly %d bytes: %d blocks, %v", len(exact), len(blocks), errs)
	}
	if _, errs := protocol.Parse(reg, fill(protocol.DefaultMaxBlockSize)); len(errs) != 1 ||
		errs[0].Msg != "[PHASE_COMPLETE] opened at line 1 is longer than 65536 bytes" {
		t.Errorf("oversized block: %v", errs)
	}
}

// A block dropped for its size is cut at a character boundary.
func TestScannerBlockSizeLimitKeepsCharacters(t *testing.T) {
	in := "[PHASE_COMPLETE]\nphase: 가나다라마바사\n[/PHASE_COMPLETE]\n"
	for limit := 1; limit < 50; limit++ {
		evs := scanAll(protocol.DefaultRegistry(), in, nil, protocol.MaxBlockSize(limit))
		for cut := range len(in) {
			if split := scanAll(protocol.DefaultRegistry(), in, []int{cut}, protocol.MaxBlockSize(limit)); !reflect.DeepEqual(split, evs) {
				t.Fatalf("limit %d, cut at %d:\n%s\nwant:\n%s", limit, cut, render(split), render(evs))
			}
		}
		if rebuild(evs) != in {
			t.Fatalf("limit %d: rebuilt %q", limit, rebuild(evs))
		}
		for _, e := range evs {
			s := e.Text
			if e.Err != nil {
				s = e.Err.Raw
			}
			if !strings.HasPrefix(in, s) && !strings.HasSuffix(in, s) && !strings.Contains(in, s) {
				t.Fatalf("limit %d: piece %q not in input", limit, s)
			}
			if !validUTF8(s) {
				t.Errorf("limit %d: piece %q splits a character", limit, s)
			}
		}
	}
}

func validUTF8(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func TestScannerReuseAfterClose(t *testing.T) {
	reg := new(protocol.Registry)
	s := protocol.NewScanner(reg)
	in := "x\n[PING]\n[/PING]\n"
	if got := render(merge(append(s.Feed(in), s.Close()...))); got != "text: \"x\\n[PING]\\n[/PING]\\n\"\n" {
		t.Errorf("before Register: %s", got)
	}
	if err := reg.Register(protocol.Kind{Name: "PING"}); err != nil {
		t.Fatal(err)
	}
	// Closed in the middle of a block: the next output starts clean.
	s.Feed("[PING]\n")
	s.Close()
	want := "text: \"x\\n\"\nblock PING 2-3: &{}\n"
	got := merge(append(s.Feed(in), s.Close()...))
	if r := strings.Replace(render(got), fmt.Sprintf("%+v", got[len(got)-1].Block.Value), "&{}", 1); r != want {
		t.Errorf("after Register and Close: %s, want %s", r, want)
	}
}

func TestKindWithoutBuild(t *testing.T) {
	reg := new(protocol.Registry)
	err := reg.Register(protocol.Kind{Name: "TASK", Fields: []protocol.FieldSpec{
		{Name: "title", Type: protocol.TextField, Required: true},
		{Name: "tags", Type: protocol.ListField},
		{Name: "urgent", Type: protocol.BoolField},
		{Name: "notes", Type: protocol.TextField},
	}})
	if err != nil {
		t.Fatal(err)
	}
	blocks, errs := protocol.Parse(reg, "[TASK]\ntitle: Ship it\ntags:\n- a\n- b\nurgent: yes\n[/TASK]\n")
	if len(errs) != 0 || len(blocks) != 1 {
		t.Fatalf("blocks %v, errors %v", blocks, errs)
	}
	f := blocks[0].Value.(*protocol.Fields)
	if f.Kind() != "TASK" || f.Text("title") != "Ship it" || !f.Bool("urgent") || !reflect.DeepEqual(f.List("tags"), []string{"a", "b"}) {
		t.Errorf("fields: %q %q %v %q", f.Kind(), f.Text("title"), f.Bool("urgent"), f.List("tags"))
	}
	if f.Has("notes") || !f.Has("title") || f.Has("nope") || f.Line("title") != 2 || f.Line("notes") != 1 || f.Text("nope") != "" {
		t.Errorf("Has/Line: %v %v %d %d", f.Has("notes"), f.Has("title"), f.Line("title"), f.Line("notes"))
	}
}

func TestBuildErrors(t *testing.T) {
	reg := new(protocol.Registry)
	fields := []protocol.FieldSpec{{Name: "a", Type: protocol.TextField}, {Name: "b", Type: protocol.TextField}}
	register := func(name string, build func(*protocol.Fields) (any, error)) {
		if err := reg.Register(protocol.Kind{Name: name, Fields: fields, Build: build}); err != nil {
			t.Fatal(err)
		}
	}
	register("JOINED", func(f *protocol.Fields) (any, error) {
		return nil, errors.Join(
			&protocol.FieldError{Field: "b", Msg: "b is wrong"},
			fmt.Errorf("wrapped: %w", &protocol.FieldError{Field: "a", Msg: "a is wrong"}),
			errors.New("the block is wrong"),
			&protocol.FieldError{Field: "missing", Msg: "missing is wrong"},
		)
	})
	register("PANICS", func(f *protocol.Fields) (any, error) { panic("boom") })
	tests := []struct {
		in   string
		want []string
	}{
		{"\n[JOINED]\na: 1\nb: 2\n[/JOINED]\n", []string{
			"line 2: the block is wrong", "line 2: missing is wrong", "line 3: a is wrong", "line 4: b is wrong",
		}},
		{"[PANICS]\na: 1\n[/PANICS]\n", []string{"line 1: [PANICS] could not be checked: its validator failed"}},
	}
	for _, tt := range tests {
		evs := scanAll(reg, tt.in, nil)
		if got := errorTexts(evs); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q: errors %q, want %q", tt.in, got, tt.want)
		}
		if rebuild(evs) != tt.in {
			t.Errorf("%q: rebuilt %q", tt.in, rebuild(evs))
		}
	}
}

func TestNewScannerNilRegistryPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	protocol.NewScanner(nil)
}

func TestMaxBlockSizeInvalidPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	protocol.MaxBlockSize(0)
}

func TestScannerProblemsCap(t *testing.T) {
	in := "[USER_QUESTION]\ncategory: choice\nquestion: Q?\n" + strings.Repeat("x: 1\n", 25) + "[/USER_QUESTION]\n"
	got := errorTexts(scanAll(protocol.DefaultRegistry(), in, nil))
	if len(got) != 21 || got[19] != `line 23: unknown field "x" in [USER_QUESTION] (known: category, question, options, default, required)` ||
		got[20] != "line 24: 5 more problems in [USER_QUESTION] are not shown" {
		t.Errorf("got %d errors, last %q", len(got), got[len(got)-1])
	}
}

// TestScannerLargeInputByteAtATime feeds a block near the size limit and
// long lines one byte at a time. Work that re-scanned the buffer on each
// chunk would take minutes here; linear work takes milliseconds.
func TestScannerLargeInputByteAtATime(t *testing.T) {
	reg := protocol.DefaultRegistry()
	summary := strings.Repeat("word ", (protocol.DefaultMaxBlockSize-100)/5)
	in := prose(256<<10) + strings.Repeat("x", 100<<10) + "\n" + strings.Repeat(" ", 200) + "\n" +
		"[PHASE_COMPLETE]\nphase: p\nsummary: " + summary + "\n[/PHASE_COMPLETE]\n" +
		"[USER_QUESTION]\n" + strings.Repeat("question line\n", 10<<10)
	want := scanAll(reg, in, nil)
	if len(want) != 4 || want[1].Block == nil || want[2].Err == nil {
		t.Fatalf("unexpected events:\n%s", render(want))
	}
	s := protocol.NewScanner(reg)
	var got []protocol.Event
	for i := range len(in) {
		got = append(got, s.Feed(in[i:i+1])...)
	}
	got = merge(append(got, s.Close()...))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("byte at a time:\n%s\nwant:\n%s", render(got), render(want))
	}
}

// A character cut between chunks reaches the text events whole, also when
// a long run of text follows it.
func TestScannerTextKeepsCharacters(t *testing.T) {
	in := "가나다 " + strings.Repeat("라마바 🎉 ", 100) + "\n" + strings.Repeat(" ", 10) + "끝\n"
	for cut := range len(in) {
		s := protocol.NewScanner(protocol.DefaultRegistry())
		evs := append(s.Feed(in[:cut]), s.Feed(in[cut:])...)
		evs = append(evs, s.Close()...)
		var b strings.Builder
		for _, e := range evs {
			if !validUTF8(e.Text) {
				t.Fatalf("cut at %d: text event %q splits a character", cut, e.Text)
			}
			b.WriteString(e.Text)
		}
		if b.String() != in {
			t.Fatalf("cut at %d: text %q", cut, b.String())
		}
	}
}

// TestScannerStreams is the scanner's tour: chunks cut anywhere, a block
// split across them, and a block left open.
func TestScannerStreams(t *testing.T) {
	var b strings.Builder
	s := protocol.NewScanner(protocol.DefaultRegistry())
	show := func(events []protocol.Event) {
		for _, e := range events {
			switch {
			case e.Block != nil:
				fmt.Fprintf(&b, "block %s: %+v\n", e.Block.Kind, e.Block.Value)
			case e.Err != nil:
				fmt.Fprintf(&b, "error: %s\n", e.Err)
			default:
				fmt.Fprintf(&b, "text %q\n", e.Text)
			}
		}
	}
	// Chunks as a model streams them, cut anywhere.
	for _, chunk := range []string{
		"Design done.\n[PHASE_",
		"COMPLETE]\nphase: design\nsum",
		"mary: API drafted.\nartifacts: [docs/api.md]\n[/PHASE_COMPLETE]\nNow the ",
		"build.\n[USER_QUESTION]\ncategory: confirmation\n",
	} {
		show(s.Feed(chunk))
	}
	show(s.Close())
	want := `text "Design done.\n"
block PHASE_COMPLETE: &{Phase:design Summary:API drafted. Artifacts:[docs/api.md]}
text "Now the "
text "build.\n"
error: [USER_QUESTION] opened at line 8 is never closed
`
	if got := b.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
