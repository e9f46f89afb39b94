package extensions_test

import "testing"

// checkErr checks that err's text is want, or that err is nil when want is "".
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("err = %v, want none", err)
	case want != "" && err == nil:
		t.Errorf("err = nil, want %q", want)
	case want != "" && err.Error() != want:
		t.Errorf("err:\n got %q\nwant %q", err.Error(), want)
	}
}
