package openai

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"unicode/utf8"
)

// Tests of the JSON scanner.

// FuzzParser checks that the scanner never panics nor loops on any input,
// and that it decodes strings as encoding/json does.
func FuzzParser(f *testing.F) {
	for _, name := range []string{"text.sse", "tool_calls_interleaved.sse", "reasoning_content.sse", "midstream_error.sse"} {
		for _, line := range bytes.Split(readRecording(f, name), []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				f.Add(d)
			}
		}
	}
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"content":"\ud83d\ude00 \u00e9 \" \\ \/ \b\f\n\r\t"}}]}`))
	f.Add([]byte(`{"error":{"message":"x","code":429}}`))
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"content":"\ud83d"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var p parser
		var ev wireEvent
		p.reset(data)
		p.event(&ev)
		var w wireError
		p.reset(data)
		p.errorBody(&w)
		// Strings: what the scanner reads is what encoding/json reads, for
		// valid UTF-8 (encoding/json replaces invalid bytes; the scanner
		// keeps them).
		if !utf8.Valid(data) {
			return
		}
		var want string
		if json.Unmarshal(data, &want) != nil || !json.Valid(data) {
			return
		}
		p.reset(data)
		got := p.str()
		if p.err != nil || got != want {
			t.Fatalf("str(%q) = %q (%v), want %q", data, got, p.err, want)
		}
	})
}

// TestParser runs the scanner on odd and malformed events.
func TestParser(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want wireEvent
		err  string
	}{
		{in: ` { "choices" : [ { "delta" : { "content" : "a" } , "index" : 0 } ] } `, want: wireEvent{content: "a"}},
		{in: `{"x":[1,-2.5e+3,true,false,null,{"y":"}]\"{"},[[]]],"choices":null,"usage":null,"error":null}`},
		{in: `{"choices":[{"index":1e0,"delta":{"content":"one"}}]}`},
		{in: `{"choices":[{"index":-1,"delta":{"content":"neg"}}]}`},
		{in: `{"choices":[{"index":"0","delta":{"content":"str index"}}]}`, want: wireEvent{content: "str index"}},
		{in: `{"choices":[{"delta":{"content":5,"reasoning":{"x":1},"tool_calls":{"a":1}}}]}`},
		{in: `{"choices":[{"delta":{"tool_calls":[{"index":null,"id":"a","function":{"name":"n","arguments":null,"x":1},"type":"function"},5]}}]}`,
			want: wireEvent{calls: []callDelta{{id: "a", name: "n"}, {}}}},
		{in: `{"choices":[],"usage":{"prompt_tokens":12345678901234567890,"completion_tokens":3.0,"prompt_tokens_details":null,"x":[]}}`,
			want: wireEvent{hasUsage: true, usage: wireUsage{prompt: math.MaxInt64, completion: 3}}},
		{in: `{"error":{"message":{"text":"m"},"code":"x","type":"t","status":"503","param":null}}`,
			want: wireEvent{err: wireError{present: true, message: `{"text":"m"}`, code: "x", typ: "t", status: 503}}},
		{in: `{"error":{"status":429}}`, want: wireEvent{err: wireError{present: true, status: 429}}},
		{in: `{"error":42}`, want: wireEvent{err: wireError{present: true}}},
		{in: `{"error":[]}`, want: wireEvent{err: wireError{present: true}}},
		{in: ``, err: "event is not a JSON object at offset 0"},
		{in: `{`, err: "unexpected end at offset 1"},
		{in: `{"a" 1}`, err: "expected ':' at offset 5"},
		{in: `{"a":1 "b":2}`, err: "expected ',' or '}' at offset 7"},
		{in: `{"a":1}x`, err: "data after the event at offset 7"},
		{in: `{"a":"b`, err: "unterminated string at offset 5"},
		{in: `{"a":"b\"`, err: "unterminated string at offset 5"},
		{in: `{"a":tru}`, err: "bad literal at offset 5"},
		{in: `{"a":[1,2`, err: "unterminated value at offset 9"},
		{in: `{"a":[1,2}`, err: "unexpected end at offset 10"},
		{in: `{"a":@}`, err: "unexpected character at offset 5"},
		{in: `{1:2}`, err: "expected a string at offset 1"},
		{in: `{"choices":[{"delta":{"content":"\x"}}]}`, err: "bad escape at offset 36"},
		{in: `{"choices":[{"delta":{"content":"\u12"}}]}`, err: "bad \\u escape at offset 38"},
		{in: `{"choices":[{"delta":{"content":"\uzzzz"}}]}`, err: "bad \\u escape at offset 40"},
		{in: `{"usage":{"prompt_tokens":1.2.3}}`, err: "bad number at offset 31"},
		{in: `{"usage":{"prompt_tokens":-1e999}}`, want: wireEvent{hasUsage: true, usage: wireUsage{prompt: math.MinInt64}}},
	}
	for _, c := range cases {
		var p parser
		var ev wireEvent
		p.reset([]byte(c.in))
		p.event(&ev)
		if c.err != "" {
			if p.err == nil || p.err.Error() != c.err {
				t.Errorf("%s: error %v, want %q", c.in, p.err, c.err)
			}
			continue
		}
		if p.err != nil {
			t.Errorf("%s: %v", c.in, p.err)
			continue
		}
		if len(ev.calls) == 0 {
			ev.calls = nil
		}
		if !reflect.DeepEqual(ev, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.in, ev, c.want)
		}
	}
}
