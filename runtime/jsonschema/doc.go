// Package jsonschema links the JSON Schema validator into a program: a
// program that imports it, for its side effect alone,
//
//	import _ "github.com/ganglion-dev/ganglion/runtime/jsonschema"
//
// checks a tool call's arguments against any JSON Schema the tool
// declares (drafts 4, 6, 7, 2019-09 and 2020-12), with a local "$ref" but
// none to a file or a URL.
//
// A program without it checks flat schemas alone — an object whose
// properties are constrained by type, integer minimum and maximum,
// minLength and maxLength, with required and additionalProperties — which
// most tools declare, the runtime's own among them; it gets the same
// verdicts and error texts. A tool whose schema uses anything else fails
// at its first call, with an error that names the keyword, where it is,
// and this import. Package runtime/mcp imports this package, since an MCP
// server's schemas may be anything; so does the ganglion command.
//
// The validator is github.com/santhosh-tekuri/jsonschema, with
// golang.org/x/text for its messages: two modules a program that
// declares only flat schemas need not link.
package jsonschema
