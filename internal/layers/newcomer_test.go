package layers

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// extensionAuthorBudget bounds the words of `go doc -all` for the packages an
// extension author reads first. Long explanations belong in
// docs/extensions.md, not in the doc comments.
const extensionAuthorBudget = 6000

// extensionAuthorPackages are the packages an extension author meets first.
var extensionAuthorPackages = []string{"pipeline", "extensions", "events", "ledger"}

// appDeveloperBudget bounds the words of `go doc -all` for the packages an
// app developer reads first. Long explanations belong in docs/embedding.md
// and runtime/config/REFERENCE.md, not in the doc comments.
const appDeveloperBudget = 6000

// appDeveloperPackages are the packages an app that embeds the runtime
// meets first.
var appDeveloperPackages = []string{"runtime", "runtime/config"}

// TestExtensionAuthorReading fails when the doc of the extension author's
// packages, as `go doc -all` prints it, grows past extensionAuthorBudget
// words, counted as `wc -w` counts them.
func TestExtensionAuthorReading(t *testing.T) {
	checkReading(t, "the extension author's", extensionAuthorPackages, extensionAuthorBudget, "docs/extensions.md")
}

// TestAppDeveloperReading fails when the doc of the app developer's
// packages, as `go doc -all` prints it, grows past appDeveloperBudget
// words, counted as `wc -w` counts them.
func TestAppDeveloperReading(t *testing.T) {
	checkReading(t, "the app developer's", appDeveloperPackages, appDeveloperBudget, "docs/embedding.md")
}

// checkReading fails t when the words of `go doc -all` for pkgs, together,
// exceed budget; the message gives each package's count and names
// reference, where long explanations belong.
func checkReading(t *testing.T, whose string, pkgs []string, budget int, reference string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs go doc")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH: cannot run go doc")
	}
	total := 0
	var counts []string
	for _, pkg := range pkgs {
		cmd := exec.Command("go", "doc", "-all", module+"/"+pkg)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go doc -all %s: %v\n%s", pkg, err, stderr.String())
		}
		n := countWords(out)
		total += n
		counts = append(counts, fmt.Sprintf("%s %d", pkg, n))
	}
	t.Logf("go doc -all: %d words (%s)", total, strings.Join(counts, ", "))
	if total > budget {
		t.Errorf("%s packages take %d words of go doc -all (%s), past the budget of %d: move long explanations to %s and state each rule in place, tersely",
			whose, total, strings.Join(counts, ", "), budget, reference)
	}
}

// countWords counts words as wc -w does: runs of bytes that are not
// whitespace (space, \t, \n, \v, \f, \r).
func countWords(b []byte) int {
	n, in := 0, false
	for _, c := range b {
		space := c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
		if !space && !in {
			n++
		}
		in = !space
	}
	return n
}

// TestCountWords checks countWords against what wc -w reports.
func TestCountWords(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int
	}{
		{"", 0}, {" \n\t", 0}, {"one", 1}, {"one two", 2}, {"  lead and trail  ", 3},
		{"tabs\tand\nnewlines\r\nmix", 4}, {"func (t *TurnContext) Next(ctx context.Context)", 5},
		{"naïve — dash", 3},
	} {
		if got := countWords([]byte(tt.in)); got != tt.want {
			t.Errorf("countWords(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
