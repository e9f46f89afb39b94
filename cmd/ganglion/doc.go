// Command ganglion runs Ganglion agents from a ganglion.yaml, answers what
// paused agents wait for, and starts, builds and inspects WebAssembly
// extensions.
//
//	ganglion run [DIR] [flags] [MESSAGE]    a turn, or an interactive session
//	ganglion history [DIR] [flags]          an instance's stored conversation
//	ganglion pending / answer / skip / provide / reject   what paused agents wait for
//	ganglion tasks / resume [DIR]           open delegation tasks; finish what a stop left open
//	ganglion ext init / build / inspect     Go guest extensions
//	ganglion rules check / eval             approval rules
//	ganglion protocol parse [FILE]          protocol blocks of a model's output
//	ganglion serve [DIR] [--addr HOST:PORT]  the agents over HTTP (package runtime/server)
//	ganglion mcp [DIR] [--http HOST:PORT]   the agents as MCP tools, over stdio or HTTP
//	ganglion version
//
// `ganglion help COMMAND` says more of each. Exit codes: 0 the turn
// finished; 1 an error; 2 a usage error; 3 the turn paused, waiting for a
// human (see `ganglion pending`).
package main
