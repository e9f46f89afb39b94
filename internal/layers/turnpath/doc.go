// Command turnpath is the program internal/layers measures the path of a
// plain turn with: built with coverage on, it sends one message to the
// quick start's agent and writes to the directory it is given which
// statements that Send ran, and nothing else did.
//
// Usage: turnpath EXAMPLE-CONFIG OUT-DIR
package main
