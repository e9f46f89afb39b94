package cassettetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/internal/golden"
	"github.com/ganglion-dev/ganglion/runtime/cassette"
)

// Check replays the cassette at path with opts and checks its transcript
// against the golden file beside it (path with ".golden" in place of its
// extension), failing t with each divergence and with a unified diff of
// the transcript. It returns the replay's result.
func Check(t testing.TB, path string, opts Options) *Result {
	t.Helper()
	c, err := cassette.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Replay(t.Context(), c, opts)
	if err != nil {
		t.Fatalf("replay of %s: %v", path, err)
	}
	for _, d := range res.Divergences {
		t.Errorf("%s: %v", path, d)
	}
	gold := strings.TrimSuffix(path, filepath.Ext(path)) + ".golden"
	if _, err := os.Stat(gold); err != nil && len(res.Divergences) > 0 {
		t.Errorf("%s not written: the replay diverged", gold) // a diverged transcript is no golden file
		return res
	}
	compareGolden(t, gold, res.Transcript)
	return res
}

// compareGolden compares got with the golden file at path and fails t with a
// unified diff (golden first) when they differ. A missing golden file is
// written, and so is one that differs when the test binary was given
// -update (if its package defines that flag) or GANGLION_UPDATE=1.
func compareGolden(t testing.TB, path, got string) {
	t.Helper()
	msg, _, err := golden.Compare(path, got, golden.Updating())
	if err != nil {
		t.Fatal(err)
	}
	if msg != "" {
		t.Error(msg + "(accept the change with -update or GANGLION_UPDATE=1)")
	}
}
