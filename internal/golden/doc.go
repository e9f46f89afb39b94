// Package golden compares text with golden files, and says how it differs
// as a unified diff: for the cassette tests of package cassettetest and
// `ganglion ext test`.
package golden
