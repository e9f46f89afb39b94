// Package racecheck reports whether the binary was built with the race
// detector. Allocation-count assertions consult it: the detector's
// instrumentation allocates on its own schedule, so testing.AllocsPerRun
// under -race measures the detector as much as the code. CI runs those
// assertions in a separate pass without -race.
package racecheck

// Enabled is true when the binary was built with -race.
const Enabled = enabled
