// Package tape is the runtime's side of a cassette: the calls the runtime
// makes to whatever records its session or replays one. Package cassette
// implements it, and registers itself in [Open] so that the runtime can
// use the tapes users hand it (runtime.WithTape) without either package's
// API showing these calls.
package tape
