package protocol_test

// The unit tests of design seeds 001 (USER_QUESTION) and 000
// (DEPENDENCY_REQUEST), ported, then one case per flaw of the seeds' code
// that this package fixes.

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions/protocol"
)

// Seed 001: describe('parseUserQuestion').
func TestSeedParseUserQuestion(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want *protocol.Question
	}{
		{
			name: "should parse question with options",
			in: `
[USER_QUESTION]
category: business
question: What pricing model?
options: [Subscription, Freemium, Ad-based]
default: Freemium
required: false
[/USER_QUESTION]
      `,
			want: &protocol.Question{
				Category: "business",
				Question: "What pricing model?",
				Options:  []string{"Subscription", "Freemium", "Ad-based"},
				Default:  "Freemium",
				Required: false,
			},
		},
		{
			name: "should parse question without options",
			in: `
[USER_QUESTION]
category: clarification
question: What is the target user age range?
required: true
[/USER_QUESTION]
      `,
			want: &protocol.Question{
				Category: "clarification",
				Question: "What is the target user age range?",
				Options:  nil,
				Default:  "",
				Required: true,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseOne(t, tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// Seed 001: describe('validateAnswer').
func TestSeedValidateAnswer(t *testing.T) {
	tests := []struct {
		name     string
		q        protocol.Question
		answer   string
		valid    bool
		contains string
	}{
		{"should validate answer from options", protocol.Question{Options: []string{"Subscription", "Freemium", "Ad-based"}, Required: true}, "Freemium", true, ""},
		{"should reject answer not in options", protocol.Question{Options: []string{"Subscription", "Freemium"}, Required: true}, "Other", false, "must be one of"},
		{"should reject empty answer for required question", protocol.Question{Required: true}, "", false, "required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.q.ValidateAnswer(tt.answer)
			if (err == nil) != tt.valid {
				t.Fatalf("err = %v, want valid %v", err, tt.valid)
			}
			if err != nil && !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not contain %q", err, tt.contains)
			}
		})
	}
}

// Seed 000: describe('parseDependencyRequest').
func TestSeedParseDependencyRequest(t *testing.T) {
	t.Run("should parse valid dependency request", func(t *testing.T) {
		in := `
[DEPENDENCY_REQUEST]
type: api_key
name: OPENAI_API_KEY
description: Required for AI features
required: true
[/DEPENDENCY_REQUEST]
      `
		want := &protocol.DependencyRequest{Type: "api_key", Name: "OPENAI_API_KEY", Description: "Required for AI features", Required: true}
		if got := parseOne(t, in); !reflect.DeepEqual(got, want) {
			t.Errorf("got %+v, want %+v", got, want)
		}
	})
	t.Run("should return null for invalid format", func(t *testing.T) {
		blocks, errs := protocol.Parse(protocol.DefaultRegistry(), "Just some regular text")
		if len(blocks) != 0 || len(errs) != 0 {
			t.Errorf("got %d blocks, %d errors; want none", len(blocks), len(errs))
		}
	})
	t.Run("should return null for missing required fields", func(t *testing.T) {
		in := `
[DEPENDENCY_REQUEST]
type: api_key
name: OPENAI_API_KEY
[/DEPENDENCY_REQUEST]
      `
		want := []string{`line 2: [DEPENDENCY_REQUEST] is missing the required field "description"`}
		if got := parseErrs(t, in); !slices.Equal(got, want) {
			t.Errorf("errors = %q, want %q", got, want)
		}
	})
}

// Seed 000: describe('validateDependencyValue').
func TestSeedValidateDependencyValue(t *testing.T) {
	root, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	tests := []struct {
		name     string
		typ      protocol.DependencyType
		value    string
		valid    bool
		contains string
	}{
		{"should validate API key", protocol.TypeAPIKey, "sk-1234567890abcdef", true, ""},
		{"should reject short API key", protocol.TypeAPIKey, "short", false, "too short"},
		{"should validate service URL", protocol.TypeService, "https://api.example.com", true, ""},
		{"should reject non-HTTP URL", protocol.TypeService, "ftp://example.com", false, ""},
		{"should reject path traversal", protocol.TypeFile, "../../../etc/passwd", false, "traversal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &protocol.DependencyRequest{Type: tt.typ, Name: "DEP", Required: true}
			_, err := protocol.ValidateDependencyValue(d, tt.value, root)
			if (err == nil) != tt.valid {
				t.Fatalf("err = %v, want valid %v", err, tt.valid)
			}
			if err != nil && !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not contain %q", err, tt.contains)
			}
		})
	}
}

// TestSeedFlaws shows each flaw of the seeds' code fixed.
func TestSeedFlaws(t *testing.T) {
	// extractField was not anchored: `category:\s*(.+)` matched inside the
	// question's text, which came first.
	t.Run("field names inside other fields do not match", func(t *testing.T) {
		q := parseOne(t, `[USER_QUESTION]
question: Should the category: premium tier be required: true by default?
category: business
[/USER_QUESTION]
`).(*protocol.Question)
		if q.Category != protocol.CategoryBusiness || q.Required {
			t.Errorf("got category %q, required %v; want business, false", q.Category, q.Required)
		}
		d := parseOne(t, `[DEPENDENCY_REQUEST]
type: env_variable
description: the name: field of the config, type: string
name: CONFIG_NAME
[/DEPENDENCY_REQUEST]
`).(*protocol.DependencyRequest)
		if d.Name != "CONFIG_NAME" || d.Type != protocol.TypeEnvVariable {
			t.Errorf("got name %q, type %q", d.Name, d.Type)
		}
	})

	// extractField returned one line, so the "- option" form always gave [].
	t.Run("dash list options work", func(t *testing.T) {
		q := parseOne(t, `[USER_QUESTION]
category: choice
question: Which database?
options:
  - PostgreSQL
  - SQLite, embedded
default: sqlite, EMBEDDED
[/USER_QUESTION]
`).(*protocol.Question)
		if want := []string{"PostgreSQL", "SQLite, embedded"}; !slices.Equal(q.Options, want) || q.Default != "SQLite, embedded" {
			t.Errorf("got options %q default %q", q.Options, q.Default)
		}
	})

	// The inline form split on every comma.
	t.Run("quoted inline options may hold commas", func(t *testing.T) {
		q := parseOne(t, `[USER_QUESTION]
category: choice
question: Which?
options: [a, "b, c", "say \"hi\""]
[/USER_QUESTION]
`).(*protocol.Question)
		if want := []string{"a", "b, c", `say "hi"`}; !slices.Equal(q.Options, want) {
			t.Errorf("got %q, want %q", q.Options, want)
		}
	})

	// required: was true only when written exactly "true".
	t.Run("bools accept yes and any case; others are errors", func(t *testing.T) {
		q := parseOne(t, "[USER_QUESTION]\ncategory: choice\nquestion: Q?\nrequired: Yes\n[/USER_QUESTION]\n").(*protocol.Question)
		if !q.Required {
			t.Error("required: Yes read as false")
		}
		got := parseErrs(t, "[USER_QUESTION]\ncategory: choice\nquestion: Q?\nrequired: maybe\n[/USER_QUESTION]\n")
		if want := []string{`line 4: field "required" must be true, false, yes or no, not "maybe"`}; !slices.Equal(got, want) {
			t.Errorf("errors = %q, want %q", got, want)
		}
	})

	// The regex took the first block only, and `includes('[USER_QUESTION]')`
	// fired on prose.
	t.Run("several blocks, and tags in prose are text", func(t *testing.T) {
		in := "Use a [USER_QUESTION] block to ask.\n" +
			"[USER_QUESTION]\ncategory: choice\nquestion: A?\n[/USER_QUESTION]\n" +
			"[USER_QUESTION]\ncategory: choice\nquestion: B?\n[/USER_QUESTION]\n"
		blocks, errs := protocol.Parse(protocol.DefaultRegistry(), in)
		if len(blocks) != 2 || len(errs) != 0 {
			t.Fatalf("got %d blocks, %d errors; want 2, 0", len(blocks), len(errs))
		}
		if blocks[1].Value.(*protocol.Question).Question != "B?" {
			t.Errorf("second block: %+v", blocks[1].Value)
		}
	})

	// The seed's own format example has default "프리미엄", which is not one of
	// its options: the default must be one of them.
	t.Run("the seed's example default is not an option", func(t *testing.T) {
		got := parseErrs(t, `[USER_QUESTION]
category: business
question: 어떤 수익 모델을 선호하시나요?
options: [구독 (월/연간), 프리미엄 (무료 + 유료), 광고 기반]
default: 프리미엄
required: false
[/USER_QUESTION]
`)
		want := []string{`line 5: default "프리미엄" must be one of the options: 구독 (월/연간), 프리미엄 (무료 + 유료), 광고 기반`}
		if !slices.Equal(got, want) {
			t.Errorf("errors = %q, want %q", got, want)
		}
	})

	// validateAnswer compared exactly; skipping an optional question with
	// options and no default sent '' and failed "must be one of".
	t.Run("answers match ignoring case; skipping works without a default", func(t *testing.T) {
		q := &protocol.Question{Options: []string{"Subscription", "Freemium"}}
		if got, err := q.ValidateAnswer("  freemium "); err != nil || got != "Freemium" {
			t.Errorf("ValidateAnswer = %q, %v", got, err)
		}
		if got, err := q.Skip(); err != nil || got != "" {
			t.Errorf("Skip = %q, %v", got, err)
		}
		if got, err := q.ValidateAnswer(""); err != nil || got != "" {
			t.Errorf("ValidateAnswer(\"\") = %q, %v", got, err)
		}
	})

	// The npm check /^(@[a-z0-9-]+\/)?[a-z0-9-]+$/ refused ".", "_" and "~".
	t.Run("valid npm names are accepted", func(t *testing.T) {
		d := &protocol.DependencyRequest{Type: protocol.TypePackage, Name: "pkg", Required: true}
		for _, v := range []string{"lodash.merge", "@types/node", "socket.io", "left_pad", "a~b"} {
			if _, err := protocol.ValidateDependencyValue(d, v, nil); err != nil {
				t.Errorf("%q: %v", v, err)
			}
		}
	})

	// value.includes('..') is no containment check: it refused "a/../b" and
	// "..data", and let a symbolic link out of the workspace through.
	t.Run("file paths are checked for containment", func(t *testing.T) {
		dir := t.TempDir()
		ws := filepath.Join(dir, "ws")
		mustMkdir(t, filepath.Join(ws, "a"))
		mustWrite(t, filepath.Join(ws, "b.txt"))
		mustWrite(t, filepath.Join(ws, "..data"))
		mustWrite(t, filepath.Join(dir, "secret.txt"))
		mustSymlink(t, filepath.Join(dir, "secret.txt"), filepath.Join(ws, "out"))
		root, err := os.OpenRoot(ws)
		if err != nil {
			t.Fatal(err)
		}
		defer root.Close()
		d := &protocol.DependencyRequest{Type: protocol.TypeFile, Name: "DATA", Required: true}
		for v, want := range map[string]string{"a/../b.txt": "b.txt", "..data": "..data"} {
			if got, err := protocol.ValidateDependencyValue(d, v, root); err != nil || got != want {
				t.Errorf("%q: got %q, %v; want %q", v, got, err, want)
			}
		}
		for v, want := range map[string]string{
			"a/../../etc/passwd": `value for "DATA" escapes the workspace (path traversal)`,
			"out":                `value for "DATA" escapes the workspace through a symbolic link`,
		} {
			if _, err := protocol.ValidateDependencyValue(d, v, root); err == nil || err.Error() != want {
				t.Errorf("%q: error %v, want %q", v, err, want)
			}
		}
	})

	// A provided secret must never appear in an error text.
	t.Run("a secret canary is absent from every error", func(t *testing.T) {
		checkCanary(t)
	})

	// Rejecting (or timing out) an optional dependency provided '', which
	// the seed's own validator refused ("Value cannot be empty").
	t.Run("an optional dependency may be declined with an empty value", func(t *testing.T) {
		d := &protocol.DependencyRequest{Type: protocol.TypeAPIKey, Name: "KEY"}
		if got, err := protocol.ValidateDependencyValue(d, "", nil); err != nil || got != "" {
			t.Errorf("got %q, %v", got, err)
		}
	})
}

// checkCanary feeds a canary, embedded in invalid values of every type, to
// ValidateDependencyValue, and fails if an error text holds any part of it.
func checkCanary(t *testing.T) {
	t.Helper()
	const canary = "CANARYzq7xK2"
	root, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	values := map[protocol.DependencyType][]string{
		protocol.TypeAPIKey:      {canary + " with spaces", canary[:5], canary + "!", "x\x00" + canary},
		protocol.TypeEnvVariable: {canary + "\x00", canary + strings.Repeat("x", 10001)},
		protocol.TypeService:     {"ftp://" + canary, "http://user:" + canary + "@[::1", canary + ":rest", "https://", "%zz" + canary},
		protocol.TypeFile:        {"../" + canary, canary, "/" + canary, canary + "\x00", strings.Repeat(canary, 50)},
		protocol.TypePermission:  {canary},
		protocol.TypePackage:     {canary, "@" + canary, "." + canary, strings.Repeat(canary, 30)},
	}
	for typ, vs := range values {
		for _, v := range vs {
			d := &protocol.DependencyRequest{Type: typ, Name: "DEP", Required: true}
			_, err := protocol.ValidateDependencyValue(d, v, root)
			if err == nil {
				t.Errorf("%s %q: accepted, want an error", typ, v)
				continue
			}
			if !errors.Is(err, protocol.ErrInvalid) {
				t.Errorf("%s: error %q does not match ErrInvalid", typ, err)
			}
			walkErrors(err, func(e error) {
				if strings.Contains(e.Error(), canary[:5]) {
					t.Errorf("%s: error text %q holds the value", typ, e)
				}
			})
		}
	}
}

// walkErrors calls fn for err and every error it wraps.
func walkErrors(err error, fn func(error)) {
	if err == nil {
		return
	}
	fn(err)
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		walkErrors(u.Unwrap(), fn)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walkErrors(e, fn)
		}
	}
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, name string) {
	t.Helper()
	if err := os.WriteFile(name, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symlinks not available: %v", err)
	}
}
