package protocol

import "slices"

// The streaming scanner is the extension's machinery, not API; the external
// tests reach it through these names.

// DefaultMaxBlockSize is the block size limit of a scanner given no
// maxBlockSize, for the external tests.
const DefaultMaxBlockSize = defaultMaxBlockSize

type (
	Scanner = scanner
	Event   = event
	Option  = scanOption
)

var (
	NewScanner   = newScanner
	MaxBlockSize = maxBlockSize
)

// Feed is feed, for the external tests.
func (s *scanner) Feed(chunk string) []event { return s.feed(chunk) }

// Close is close, for the external tests.
func (s *scanner) Close() []event { return s.close() }

// Lookup, Names and Fields.Kind are for the tests only: the scanner reads a
// registry through its snapshot.

// Lookup returns the kind registered under name.
func (r *Registry) Lookup(name string) (Kind, bool) {
	kd, ok := r.load().byName[name]
	if !ok {
		return Kind{}, false
	}
	return Kind{Name: kd.name, Fields: slices.Clone(kd.fields), Build: kd.build}, true
}

// Names returns the names of the registered kinds, sorted.
func (r *Registry) Names() []string {
	set := r.load()
	names := make([]string, 0, len(set.byName))
	for name := range set.byName {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Kind returns the name of the block's kind.
func (f *Fields) Kind() string { return f.kind.name }
