// Package plainjson encodes JSON as people and models read it: with <, >
// and & as they are, not as the \u003c, \u003e and \u0026 that
// encoding/json writes by default so that its output is safe inside HTML.
// A person reading a listing, and a model reading a tool result or the
// arguments a human edited, would see the escapes; a JSON decoder sees no
// difference. Everything else is encoding/json's.
//
// JSON sent to programs (the HTTP API, webhooks, the store) keeps
// encoding/json's escapes, harmless there.
package plainjson
