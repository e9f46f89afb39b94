// Package cassettetest replays recorded sessions in tests and checks what
// they produce against golden files: the harness behind `ganglion ext
// test`, for `go test`.
//
// A test loads the config under test (and registers any native extension
// or Go tool with runtime options), replays a cassette recorded with
// `ganglion run --record` or a [cassette.Recorder], and compares the
// transcript with the golden file beside the cassette:
//
//	func TestGreeter(t *testing.T) {
//		cfg, err := config.Load("ganglion.yaml")
//		if err != nil {
//			t.Fatal(err)
//		}
//		cassettetest.Check(t, "testdata/hello.cassette", cassettetest.Options{Config: cfg})
//	}
//
// The transcript ([Result.Transcript]) is text, a line a thing: each
// input, the events it caused (grouped by instance), its outcome; then
// each instance's history, extension state and tasks, and the pending
// items. A change in behaviour fails the test twice over, each time with
// a readable diff: the model was sent something else than it was in the
// recording (a [cassette.Divergence]: which call, which message, which
// field), and the transcript differs from the golden file. Accept a
// change with -update (when the test package defines that flag) or
// GANGLION_UPDATE=1.
package cassettetest
