// Package mcp links MCP servers into a program as sources of tools: an
// agent that lists servers under mcp_servers in the config is offered
// their tools, named <server>__<tool>, listed anew at each step.
//
// The package has no API: import it for its effect,
//
//	import _ "github.com/ganglion-dev/ganglion/runtime/mcp"
//
// A program that runs a config with mcp_servers and does not import it
// fails at load with an error that says so. The ganglion command imports
// it. Importing it links the JSON Schema validator (runtime/jsonschema)
// too, since a server's tool schemas may use any keyword. The config's fields are described in runtime/config/REFERENCE.md.
//
// A server whose env or headers name a provided secret runs once per
// instance, with that instance's secrets, and restarts when they change;
// the others run once for the runtime. The command of a stdio server gets
// only a few variables of the runtime's environment (PATH, HOME, the
// locale) besides its env, never a provider's key, and on Linux dies with
// the runtime's process however it ends.
package mcp
