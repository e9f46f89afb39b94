package protocol_test

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/ganglion-dev/ganglion/extensions/protocol"
)

func TestQuestionRules(t *testing.T) {
	tests := []struct {
		name string
		body string
		want *protocol.Question // nil: errs
		errs []string
	}{
		{"every category", "category: confirmation\nquestion: OK?\n",
			&protocol.Question{Category: protocol.CategoryConfirmation, Question: "OK?"}, nil},
		{"category ignores case", "category: Business\nquestion: Q?\n",
			&protocol.Question{Category: protocol.CategoryBusiness, Question: "Q?"}, nil},
		{"unknown category", "category: biz\nquestion: Q?\n", nil,
			[]string{`line 2: unknown category "biz" (want business, clarification, choice or confirmation)`}},
		{"default is stored as the option is written", "category: choice\nquestion: Q?\noptions: [Yes, No]\ndefault:   nO \n",
			&protocol.Question{Category: protocol.CategoryChoice, Question: "Q?", Options: []string{"Yes", "No"}, Default: "No"}, nil},
		{"default not among the options", "category: choice\nquestion: Q?\noptions: [Yes, No]\ndefault: Maybe\n", nil,
			[]string{`line 5: default "Maybe" must be one of the options: Yes, No`}},
		{"default without options is free", "category: clarification\nquestion: Age range?\ndefault: 18-35\n",
			&protocol.Question{Category: protocol.CategoryClarification, Question: "Age range?", Default: "18-35"}, nil},
		{"options listed twice", "category: choice\nquestion: Q?\noptions: [Yes, No, yes]\n", nil,
			[]string{`line 4: option "yes" is listed twice`}},
		{"several rule errors", "default: x\noptions: [a, A]\ncategory: what\nquestion: Q?\n", nil,
			[]string{
				`line 2: default "x" must be one of the options: a, A`,
				`line 3: option "A" is listed twice`,
				`line 4: unknown category "what" (want business, clarification, choice or confirmation)`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := q(tt.body)
			if tt.want != nil {
				if got := parseOne(t, in); !reflect.DeepEqual(got, tt.want) {
					t.Errorf("got %+v, want %+v", got, tt.want)
				}
				return
			}
			if got := parseErrs(t, in); !slices.Equal(got, tt.errs) {
				t.Errorf("errors %q, want %q", got, tt.errs)
			}
		})
	}
}

func TestValidateAnswer(t *testing.T) {
	opts := []string{"Subscription", "Freemium", "Ad-based"}
	tests := []struct {
		name   string
		q      protocol.Question
		answer string
		want   string
		err    string
	}{
		{"option as written", protocol.Question{Options: opts, Required: true}, "Freemium", "Freemium", ""},
		{"option ignoring case and blanks", protocol.Question{Options: opts, Required: true}, "  ad-BASED\n", "Ad-based", ""},
		{"not an option", protocol.Question{Options: opts, Required: true}, "Other", "", `answer "Other" must be one of: Subscription, Freemium, Ad-based`},
		{"not an option, optional question", protocol.Question{Options: opts}, "Other", "", `answer "Other" must be one of: Subscription, Freemium, Ad-based`},
		{"empty, required", protocol.Question{Required: true}, "", "", "an answer is required"},
		{"blank, required, with options", protocol.Question{Options: opts, Required: true}, " \t\n", "", "an answer is required"},
		{"empty, optional: the default", protocol.Question{Options: opts, Default: "Freemium"}, "", "Freemium", ""},
		{"empty, optional, no default", protocol.Question{}, "  ", "", ""},
		{"free text is trimmed", protocol.Question{Required: true}, "  18 to 35\n", "18 to 35", ""},
		{"free text keeps inner lines", protocol.Question{}, "a\nb", "a\nb", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.q.ValidateAnswer(tt.answer)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err || !errors.Is(err, protocol.ErrInvalid) {
					t.Fatalf("err = %v, want %q matching ErrInvalid", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestSkip(t *testing.T) {
	tests := []struct {
		name string
		q    protocol.Question
		want string
		err  string
	}{
		{"optional with default", protocol.Question{Options: []string{"a", "b"}, Default: "b"}, "b", ""},
		{"optional without default", protocol.Question{}, "", ""},
		{"required", protocol.Question{Default: "b", Required: true}, "", "a required question cannot be skipped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.q.Skip()
			if tt.err != "" {
				if err == nil || err.Error() != tt.err || !errors.Is(err, protocol.ErrInvalid) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestPhaseComplete(t *testing.T) {
	in := "[PHASE_COMPLETE]\nphase: design\nsummary: Drafted.\n  Reviewed.\nartifacts:\n  - docs/api.md\n  - docs/rationale.md\n[/PHASE_COMPLETE]\n"
	want := &protocol.PhaseComplete{Phase: "design", Summary: "Drafted.\n  Reviewed.", Artifacts: []string{"docs/api.md", "docs/rationale.md"}}
	if got := parseOne(t, in); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := parseOne(t, "[PHASE_COMPLETE]\nphase: p\nsummary: s\n[/PHASE_COMPLETE]\n"); got.(*protocol.PhaseComplete).Artifacts != nil {
		t.Errorf("artifacts %q, want nil", got.(*protocol.PhaseComplete).Artifacts)
	}
	got := parseErrs(t, "[PHASE_COMPLETE]\nphase: p\nartifacts: []\n[/PHASE_COMPLETE]\n")
	want2 := []string{
		`line 1: [PHASE_COMPLETE] is missing the required field "summary"`,
		`line 3: field "artifacts" is an empty list`,
	}
	if !slices.Equal(got, want2) {
		t.Errorf("errors %q, want %q", got, want2)
	}
}
