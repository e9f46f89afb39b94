package secret

// Limits and lengths the external tests check against.
const (
	MinRedactLen = minRedactLen
	Overhead     = overhead
)

// Empty lets the external tests ask whether r masks nothing.
func (r *Redactor) Empty() bool { return r.empty() }
