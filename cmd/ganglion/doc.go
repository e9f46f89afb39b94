// Command ganglion runs Ganglion agents from a ganglion.yaml.
//
//	ganglion run [DIR] [flags] [MESSAGE]
//	ganglion history [DIR] [flags]
//	ganglion version
//
// Exit codes: 0 the turn finished; 1 an error; 2 a usage error; 3 the turn
// paused, waiting for a human (see `ganglion pending`, a later command).
package main
