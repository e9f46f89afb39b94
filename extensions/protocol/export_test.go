package protocol

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
