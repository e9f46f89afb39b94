package extensions

// Unexported limits and errors, for the tests of package extensions_test.
const MaxStateSize = maxStateSize

var ErrNoBus = errNoBus
