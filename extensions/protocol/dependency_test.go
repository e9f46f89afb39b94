package protocol_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions/protocol"
)

func d(body string) string { return "[DEPENDENCY_REQUEST]\n" + body + "[/DEPENDENCY_REQUEST]\n" }

func TestDependencyRules(t *testing.T) {
	tests := []struct {
		name string
		body string
		want *protocol.DependencyRequest
		errs []string
	}{
		{"every type", "type: Package\nname: lodash\ndescription: utilities\nrequired: yes\n",
			&protocol.DependencyRequest{Type: protocol.TypePackage, Name: "lodash", Description: "utilities", Required: true}, nil},
		{"env_variable name", "type: env_variable\nname: _DB_URL2\ndescription: d\n",
			&protocol.DependencyRequest{Type: protocol.TypeEnvVariable, Name: "_DB_URL2", Description: "d"}, nil},
		{"names of other types are free", "type: service\nname: Billing API (staging)\ndescription: d\n",
			&protocol.DependencyRequest{Type: protocol.TypeService, Name: "Billing API (staging)", Description: "d"}, nil},
		{"unknown type", "type: secret\nname: X\ndescription: d\n", nil,
			[]string{`line 2: unknown type "secret" (want api_key, env_variable, service, file, permission or package)`}},
		{"api_key name with spaces", "type: api_key\nname: OPENAI API KEY\ndescription: d\n", nil,
			[]string{`line 3: name "OPENAI API KEY" must be an environment variable name for type api_key (1 to 64 letters, digits and _, not starting with a digit)`}},
		{"env_variable name with a leading digit", "type: env_variable\nname: 1X\ndescription: d\n", nil,
			[]string{`line 3: name "1X" must be an environment variable name for type env_variable (1 to 64 letters, digits and _, not starting with a digit)`}},
		{"env_variable name with a dash", "type: env_variable\nname: MY-VAR\ndescription: d\n", nil,
			[]string{`line 3: name "MY-VAR" must be an environment variable name for type env_variable (1 to 64 letters, digits and _, not starting with a digit)`}},
		{"api_key name over 64 bytes", "type: api_key\nname: " + strings.Repeat("K", 65) + "\ndescription: d\n", nil,
			[]string{`line 3: name "` + strings.Repeat("K", 65) + `" must be an environment variable name for type api_key (1 to 64 letters, digits and _, not starting with a digit)`}},
		{"missing fields", "type: api_key\n", nil,
			[]string{
				`line 1: [DEPENDENCY_REQUEST] is missing the required field "name"`,
				`line 1: [DEPENDENCY_REQUEST] is missing the required field "description"`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.want != nil {
				if got := parseOne(t, d(tt.body)); !reflect.DeepEqual(got, tt.want) {
					t.Errorf("got %+v, want %+v", got, tt.want)
				}
				return
			}
			if got := parseErrs(t, d(tt.body)); !slices.Equal(got, tt.errs) {
				t.Errorf("errors %q, want %q", got, tt.errs)
			}
		})
	}
}

type valueCase struct {
	name  string
	value string
	want  string // canonical value when err is ""
	err   string
}

func runValueCases(t *testing.T, typ protocol.DependencyType, root *os.Root, tests []valueCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dep := &protocol.DependencyRequest{Type: typ, Name: "DEP", Required: true}
			got, err := protocol.ValidateDependencyValue(dep, tt.value, root)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("got %q, %v; want error %q", got, err, tt.err)
				}
				if !errors.Is(err, protocol.ErrInvalid) {
					t.Errorf("error %q does not match ErrInvalid", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestValueEmpty(t *testing.T) {
	for _, typ := range []protocol.DependencyType{protocol.TypeAPIKey, protocol.TypeEnvVariable, protocol.TypeService, protocol.TypeFile, protocol.TypePermission, protocol.TypePackage} {
		t.Run(string(typ), func(t *testing.T) {
			runValueCases(t, typ, nil, []valueCase{
				{"empty", "", "", `value for "DEP" cannot be empty: the dependency is required`},
				{"blank", " \t\n", "", `value for "DEP" cannot be empty: the dependency is required`},
			})
			dep := &protocol.DependencyRequest{Type: typ, Name: "DEP"}
			if got, err := protocol.ValidateDependencyValue(dep, " ", nil); got != "" || err != nil {
				t.Errorf("optional: got %q, %v; want \"\", nil", got, err)
			}
		})
	}
}

func TestValueAPIKey(t *testing.T) {
	runValueCases(t, protocol.TypeAPIKey, nil, []valueCase{
		{"typical", "sk-1234567890abcdef", "sk-1234567890abcdef", ""},
		{"exactly 8", "abcd_-12", "abcd_-12", ""},
		{"pasted with a newline", "  sk-1234567890abcdef\n", "sk-1234567890abcdef", ""},
		{"7 characters", "abcdefg", "", `value for "DEP" is too short for an API key: it needs at least 8 characters`},
		{"inner space", "sk-1234 567890", "", `value for "DEP" is not a valid API key: only letters, digits, _ and - are allowed`},
		{"other punctuation", "sk.12345678", "", `value for "DEP" is not a valid API key: only letters, digits, _ and - are allowed`},
		{"non-ASCII", "sk-éééééééé", "", `value for "DEP" is not a valid API key: only letters, digits, _ and - are allowed`},
	})
}

func TestValueEnvVariable(t *testing.T) {
	runValueCases(t, protocol.TypeEnvVariable, nil, []valueCase{
		{"anything goes", "postgres://u:p@h/db?x=1 ;\n", "postgres://u:p@h/db?x=1 ;\n", ""},
		{"kept as given", "  spaced  ", "  spaced  ", ""},
		{"unicode", "값", "값", ""},
		{"10000 bytes", strings.Repeat("x", 10000), strings.Repeat("x", 10000), ""},
		{"10001 bytes", strings.Repeat("x", 10001), "", `value for "DEP" is too long: the limit is 10000 bytes`},
		{"NUL", "a\x00b", "", `value for "DEP" contains a NUL byte`},
	})
}

func TestValueService(t *testing.T) {
	runValueCases(t, protocol.TypeService, nil, []valueCase{
		{"https", "https://api.example.com", "https://api.example.com", ""},
		{"http with port and path", " http://localhost:8080/v1 ", "http://localhost:8080/v1", ""},
		{"upper-case scheme", "HTTPS://x.example", "HTTPS://x.example", ""},
		{"ipv6", "http://[::1]:80/", "http://[::1]:80/", ""},
		{"ftp", "ftp://example.com", "", `value for "DEP" must be an http or https URL`},
		{"no scheme", "example.com", "", `value for "DEP" must be an http or https URL`},
		{"no host", "https://", "", `value for "DEP" is a URL without a host`},
		{"opaque", "http:example.com", "", `value for "DEP" is a URL without a host`},
		{"port only", "http://:80", "", `value for "DEP" is a URL without a host`},
		{"unparsable", "http://[::1", "", `value for "DEP" is not a valid URL`},
	})
}

func TestValuePermission(t *testing.T) {
	runValueCases(t, protocol.TypePermission, nil, []valueCase{
		{"true", "true", "true", ""},
		{"YES", " YES ", "true", ""},
		{"No", "No", "false", ""},
		{"False", "False", "false", ""},
		{"maybe", "maybe", "", `value for "DEP" must be true, false, yes or no`},
		{"y", "y", "", `value for "DEP" must be true, false, yes or no`},
	})
}

func TestValuePackage(t *testing.T) {
	const chars = `value for "DEP" is not a valid npm package name: it may only hold lowercase letters, digits, ".", "_", "~" and "-" (after an optional "@scope/")`
	runValueCases(t, protocol.TypePackage, nil, []valueCase{
		{"plain", "react", "react", ""},
		{"dot", "lodash.merge", "lodash.merge", ""},
		{"scoped", "@types/node", "@types/node", ""},
		{"scoped with dots", "@babel/plugin.x-y_z~1", "@babel/plugin.x-y_z~1", ""},
		{"leading dash", "-x", "-x", ""},
		{"214 characters", strings.Repeat("a", 214), strings.Repeat("a", 214), ""},
		{"215 characters", strings.Repeat("a", 215), "", `value for "DEP" is not a valid npm package name: it is longer than 214 characters`},
		{"upper case", "React", "", `value for "DEP" is not a valid npm package name: it must be lowercase`},
		{"leading dot", ".bin", "", `value for "DEP" is not a valid npm package name: it cannot start with "." or "_"`},
		{"leading underscore", "_x", "", `value for "DEP" is not a valid npm package name: it cannot start with "." or "_"`},
		{"scoped leading dot", "@types/.x", "", `value for "DEP" is not a valid npm package name: it cannot start with "." or "_"`},
		{"space", "left pad", "", chars},
		{"version", "lodash@4", "", chars},
		{"slash", "a/b", "", chars},
		{"non-ASCII", "café", "", chars},
		{"bare scope", "@types", "", `value for "DEP" is not a valid npm package name: a scoped name has the form "@scope/name"`},
		{"empty scope", "@/x", "", `value for "DEP" is not a valid npm package name: a scoped name has the form "@scope/name"`},
		{"empty name", "@types/", "", `value for "DEP" is not a valid npm package name: a scoped name has the form "@scope/name"`},
		{"two slashes", "@a/b/c", "", chars},
		{"reserved", "node_modules", "", `value for "DEP" is not a valid npm package name: it is a reserved name`},
		{"reserved favicon", "favicon.ico", "", `value for "DEP" is not a valid npm package name: it is a reserved name`},
	})
}

func TestValueFile(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	mustMkdir(t, filepath.Join(ws, "sub", "deep"))
	mustWrite(t, filepath.Join(ws, "data.csv"))
	mustWrite(t, filepath.Join(ws, "sub", "deep", "f.txt"))
	mustWrite(t, filepath.Join(dir, "outside.txt"))
	mustMkdir(t, filepath.Join(dir, "outdir"))
	mustWrite(t, filepath.Join(dir, "outdir", "f.txt"))
	mustSymlink(t, "sub/deep/f.txt", filepath.Join(ws, "link-in"))
	mustSymlink(t, "sub", filepath.Join(ws, "dir-in"))
	mustSymlink(t, "../outside.txt", filepath.Join(ws, "link-out"))
	mustSymlink(t, filepath.Join(dir, "outdir"), filepath.Join(ws, "dir-out"))
	mustSymlink(t, "nowhere", filepath.Join(ws, "dangling"))
	mustSymlink(t, "loop", filepath.Join(ws, "loop"))
	root, err := os.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()

	const (
		traversal = `value for "DEP" escapes the workspace (path traversal)`
		viaLink   = `value for "DEP" escapes the workspace through a symbolic link`
		missing   = `value for "DEP" names a file that does not exist in the workspace`
	)
	runValueCases(t, protocol.TypeFile, root, []valueCase{
		{"relative", "data.csv", "data.csv", ""},
		{"nested, cleaned", "./sub//deep/../deep/f.txt", "sub/deep/f.txt", ""},
		{"dot-dot inside stays inside", "sub/../data.csv", "data.csv", ""},
		{"absolute inside", filepath.Join(ws, "sub", "deep", "f.txt"), "sub/deep/f.txt", ""},
		{"symlink inside", "link-in", "link-in", ""},
		{"through a directory symlink inside", "dir-in/deep/f.txt", "dir-in/deep/f.txt", ""},
		{"parent", "../outside.txt", "", traversal},
		{"seed's case", "../../../etc/passwd", "", traversal},
		{"dot-dot after a name", "a/../../etc/passwd", "", traversal},
		{"absolute outside", filepath.Join(dir, "outside.txt"), "", traversal},
		{"absolute root", "/etc/passwd", "", traversal},
		{"dot-dot alone", "..", "", traversal},
		{"symlink out", "link-out", "", viaLink},
		{"through a directory symlink out", "dir-out/f.txt", "", viaLink},
		{"missing", "nope.txt", "", missing},
		{"dangling symlink", "dangling", "", missing},
		{"under a file", "data.csv/x", "", `value for "DEP" names a path that cannot be resolved in the workspace`},
		{"symlink loop", "loop", "", `value for "DEP" names a path that cannot be resolved in the workspace`},
		{"directory", "sub", "", `value for "DEP" names a directory, not a file`},
		{"workspace itself", ".", "", `value for "DEP" names a directory, not a file`},
		{"NUL", "data.csv\x00", "", `value for "DEP" contains a NUL byte`},
		{"501 bytes", strings.Repeat("a/", 250) + "b", "", `value for "DEP" is too long for a file path: the limit is 500 bytes`},
	})

	t.Run("missing file matches fs.ErrNotExist", func(t *testing.T) {
		_, err := protocol.ValidateDependencyValue(&protocol.DependencyRequest{Type: protocol.TypeFile, Name: "DEP"}, "nope", root)
		if !errors.Is(err, fs.ErrNotExist) || !errors.Is(err, protocol.ErrInvalid) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("no workspace", func(t *testing.T) {
		_, err := protocol.ValidateDependencyValue(&protocol.DependencyRequest{Type: protocol.TypeFile, Name: "DEP"}, "data.csv", nil)
		if err == nil || errors.Is(err, protocol.ErrInvalid) || err.Error() != `validate dependency value "DEP": no workspace to resolve file paths in` {
			t.Errorf("err = %v", err)
		}
	})
}

func TestValueBadRequest(t *testing.T) {
	if _, err := protocol.ValidateDependencyValue(nil, "x", nil); err == nil || errors.Is(err, protocol.ErrInvalid) {
		t.Errorf("nil request: %v", err)
	}
	_, err := protocol.ValidateDependencyValue(&protocol.DependencyRequest{Type: "secret", Name: "X"}, "x", nil)
	if err == nil || errors.Is(err, protocol.ErrInvalid) || err.Error() != `validate dependency value: unknown dependency type "secret"` {
		t.Errorf("unknown type: %v", err)
	}
}

func TestSecretValuesNeverInErrors(t *testing.T) { checkCanary(t) }

func TestDependencySecret(t *testing.T) {
	for typ, want := range map[protocol.DependencyType]bool{
		protocol.TypeAPIKey: true, protocol.TypeEnvVariable: true, protocol.TypeService: false,
		protocol.TypeFile: false, protocol.TypePermission: false, protocol.TypePackage: false,
	} {
		if got := (&protocol.DependencyRequest{Type: typ}).Secret(); got != want {
			t.Errorf("%s: Secret() = %v", typ, got)
		}
	}
}
