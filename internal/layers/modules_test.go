package layers

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// lean are the packages that link no module but this one and the
// standard library: what an extension, a store or a program that only
// reads histories imports, and the token counter, whose vocabularies are
// data of its own. Badger is in store/badger, NATS in store/jetstream, so
// that importing store does not link them.
var lean = []string{"store", "store/storetest", "extensions", "pipeline", "events", "ledger", "runtime/internal/tokens"}

// embedModules is the most third-party modules examples/embed may link: a
// program that embeds the runtime with the scripted model, badger, the
// standard built-ins and one extension of its own. What it links is
// badger's (with OpenTelemetry's API, which badger traces with), wazero,
// expr, the YAML parser, the shell parser and glob matching of approval
// rules: a model provider's SDK, MCP, the cluster's NATS client, OTLP
// export and the JSON Schema library are linked only by importing them.
const embedModules = 20

// TestEmbedLinksOnlyWhatItUses fails if examples/embed links more than
// embedModules third-party modules, naming them.
func TestEmbedLinksOnlyWhatItUses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH, which lists the packages' dependencies: " + err.Error())
	}
	var mods []string
	for line := range strings.Lines(goList(t, []string{"-deps", "-f", `{{with .Module}}{{.Path}}{{end}}`, module + "/examples/embed"})) {
		if m := strings.TrimSpace(line); m != "" && m != module {
			mods = append(mods, m)
		}
	}
	slices.Sort(mods)
	mods = slices.Compact(mods)
	t.Logf("examples/embed links %d modules: %s", len(mods), strings.Join(mods, ", "))
	if len(mods) > embedModules {
		t.Errorf("examples/embed links %d third-party modules, past %d:\n  %s", len(mods), embedModules, strings.Join(mods, "\n  "))
	}
}

// TestLeanPackagesLinkNoModule fails if a package of lean links, directly
// or through another, a package of a module other than this one, naming
// the module and the package of this one that imports it.
func TestLeanPackagesLinkNoModule(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH, which lists the packages' dependencies: " + err.Error())
	}
	var pkgs []string
	for _, p := range lean {
		pkgs = append(pkgs, module+"/"+p)
	}
	// Every package linked, with its module and its imports; then each
	// lean package's dependencies.
	type listed struct {
		module  string
		imports []string
	}
	all := map[string]listed{}
	for line := range strings.Lines(goList(t, append([]string{"-deps", "-f", `{{.ImportPath}} {{with .Module}}{{.Path}}{{else}}std{{end}}{{range .Imports}} {{.}}{{end}}`}, pkgs...))) {
		f := strings.Fields(line)
		all[f[0]] = listed{f[1], f[2:]}
	}
	for line := range strings.Lines(goList(t, append([]string{"-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`}, pkgs...))) {
		f := strings.Fields(line)
		var linked []string
		for _, p := range f {
			if all[p].module != module {
				continue
			}
			for _, imp := range all[p].imports {
				if mod := all[imp].module; mod != module && mod != "std" {
					linked = append(linked, mod+", imported by "+p)
				}
			}
		}
		if len(linked) > 0 {
			slices.Sort(linked)
			t.Errorf("package %s links modules other than %s:\n  %s", strings.TrimPrefix(f[0], module+"/"), module, strings.Join(slices.Compact(linked), "\n  "))
		}
	}
}

// goList runs go list with args and returns its output.
func goList(t *testing.T, args []string) string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	return string(out)
}
