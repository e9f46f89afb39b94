// Package xmltools lets a model without native tool calling call tools by
// writing XML in its text, the protocol of Roo-Code's
// AssistantMessageParser:
//
//	I will read the notes first.
//	<read_file>
//	<path>notes.txt</path>
//	</read_file>
//
// [Wrap] puts a [model.Provider] behind the protocol: it describes the
// tools in the system prompt, shows the model its history as XML, and
// parses what the model streams, in pieces split anywhere, into the chunks
// of a native tool-calling model (text, tool_call_start, tool_call_delta,
// tool_call_end). Wrap is the package's one entry point; the parser, the
// prompt and the history view it uses are described here.
//
// # Grammar
//
// Outside calls everything is text. A call is
//
//	<tool> blanks (<param>value</param> blanks)* </tool>
//
// where tool is the name of an offered tool, param a name of letters,
// digits, '_', '-' and '.' (at most 64), and blanks spaces, tabs and line
// breaks. A value is every byte up to the parameter's own closing tag,
// verbatim: no escaping, and a '<' that does not start "</param>" is part
// of it (code such as "if a < b", or HTML). One leading and one trailing
// line break ("\n" or "\r\n") are dropped, so that a value can sit on lines
// of its own. Without escaping, a value cannot hold its own closing tag.
//
// A naive parser that matches /<(\w+)>([\s\S]*?)<\/\1>/ over the whole
// message takes any tag — "<b>bold</b>" in prose — for a tool call, and
// buffers the message until the end. This one does not:
//
//   - Only the name of an offered tool opens a call: "<b>bold</b>", "a < b"
//     and "<div>" are text. (A call of a tool that was not offered is
//     reported under strict conditions, see below.)
//   - Even an offered tool's tag opens a call only when the first thing
//     after it, blanks aside, is a parameter's tag or the call's closing
//     tag. "Use <read_file> to read a file" and "`<read_file>`" are text.
//     One exception: when a single line of text, and blanks, lead from the
//     tag to its closing tag ("<read_file>notes.txt</read_file>"), the
//     model meant a call but forgot the parameter's tags; that is a
//     malformed call (see below), not prose. To tell, the parser holds
//     the rest of the line after such a tag.
//   - Text goes out as soon as it cannot begin a call. The parser holds
//     back only a possible partial tag at the end of the input so far
//     (at most 65 bytes, such as "<read_fi"), an incomplete UTF-8
//     character, an offered tool's tag until it knows whether it opens a
//     call, a call being read (until its closing tag, since its arguments
//     go out as one piece), and a would-be call of an unknown tool (see
//     below).
//
// # Chunks
//
// A call goes out as tool_call_start once the parser knows it is one (at
// its first parameter's tag), then, at its closing tag, one
// tool_call_delta holding all its arguments as a JSON object (parameter
// name → value, in the order written) and tool_call_end. Calls are numbered
// "xml_call_<turn>_<step>_1", "xml_call_<turn>_<step>_2", ..., unique in
// an instance's history. Text outside calls goes out as text chunks;
// all of the input but the calls' text reaches them, byte for byte.
//
// Values are strings, except when the tool's parameters schema gives the
// parameter's "type" (a string or a list) without "string" in it: then a
// value that reads as integer, number, boolean ("true"/"false" in any
// case), null, or a JSON object or array becomes that JSON value. A value
// that does not read as its type stays a string, and the runtime's schema
// check tells the model ("/offset: got string, want integer"). Schemas in
// anyOf, oneOf or $ref are not looked into: those values stay strings.
//
// # Malformed calls
//
// Problems must reach the model, which can fix them, and must never end a
// turn silently. A call of an offered tool that breaks the grammar once it
// has begun — text between parameters, a stray closing tag, a '<' that is
// no tag, a parameter given twice (there is no "last wins": the model
// said two things, and is asked which), or an input that ends before the
// closing tag (an answer cut off by the output limit) — is still reported
// as a call of that tool: its arguments are the raw text the model wrote
// for it, from "<tool>" to "</tool>" (or the end of the input). That text
// starts with '<', so it is never JSON:
//
//   - the runtime does not run the tool; it answers the call with an error
//     result ("tool "read_file": arguments are not valid JSON ..."), so the
//     turn goes on and the model gets to try again — exactly what happens
//     to a native call with broken JSON arguments;
//
//   - the history keeps, byte for byte, what the model wrote, and the
//     history view shows it back as it was;
//
//   - the history view recomputes from that text what is wrong, in the
//     protocol's words ("the <path> parameter was never closed with
//     </path>"), and shows the model that diagnosis instead of the
//     runtime's words about JSON.
//
// So after an answer cut off in a call, the model reads:
//
//	[read_file error]
//	Your <read_file> call was not run: the <read_file> call was never
//	closed with </read_file> (was your answer cut off?). Write the whole
//	call again.
//
// Other designs were worse. Turning a malformed call into text ends the
// turn as if the model had answered, and it never learns that its call
// was lost. An error marker in valid JSON ({"__xml_error": ...}) passes
// the runtime's check for a tool whose schema allows extra properties, and
// the tool runs with nonsense.
//
// # Calls of unknown tools
//
// A model sometimes calls a tool it was not offered (one it was trained
// on). Such a call written as text would end the turn silently, so the
// parser reports a call of an unknown tool when all of these hold:
//
//   - its name looks like a tool's, not like an HTML or XML element's:
//     lower-case snake_case with at least one '_' ("attempt_completion";
//     never "b", "div", "my-widget", "Item_List");
//   - its content follows the grammar: one parameter or more, nothing
//     but blanks between them, and the closing tag;
//   - no parameter has the name of an offered tool, and no value holds an
//     offered tool's opening tag (a wrapper around a real call is text, and
//     the call in it is parsed);
//   - it is not in a fenced code block of the text (between lines that
//     start with "```" or "~~~"), where a model shows XML rather than
//     calls tools;
//   - the parser was offered at least one tool.
//
// Its arguments are the parameters as strings, and the runtime answers
// `unknown tool "attempt_completion"; the tools offered are: ...`. As the
// parser cannot know such a call is one before its closing tag, it holds
// the text from the tag on while the grammar holds; at the first break
// (prose, a stray character), the tag and what followed are text again.
// So "<my_var> is a placeholder" or "<foo_bar>\ntext" stay text; what a
// model would write as "<snake_case><x>...</x></snake_case>" in prose is
// taken for a call, a risk the snake_case rule keeps small. When a would-be
// call turns out to be text, no unknown tool's call is looked for in what
// it spanned (offered tools' calls are), so that the parser never reads
// the same bytes over and over: its time is linear in the input.
package xmltools
