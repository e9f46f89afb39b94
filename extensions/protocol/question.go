package protocol

import (
	"errors"
	"fmt"
	"strings"
)

// KindUserQuestion is the name of the block that asks the user a question.
const KindUserQuestion = "USER_QUESTION"

// Category is the kind of a [Question].
type Category string

// The categories of a question.
const (
	CategoryBusiness      Category = "business"      // a business decision
	CategoryClarification Category = "clarification" // clarifies a requirement
	CategoryChoice        Category = "choice"        // offers choices
	CategoryConfirmation  Category = "confirmation"  // asks for confirmation
)

var categories = []Category{CategoryBusiness, CategoryClarification, CategoryChoice, CategoryConfirmation}

// Question is the value of a USER_QUESTION block:
//
//	[USER_QUESTION]
//	category: business
//	question: What pricing model?
//	options: [Subscription, Freemium, Ad-based]
//	default: Freemium
//	required: false
//	[/USER_QUESTION]
//
// Its methods only read it and are safe for concurrent use.
type Question struct {
	// Category is one of the Category constants (the block's value is
	// matched ignoring case).
	Category Category `json:"category"`
	// Question is the question's text; continuation lines are joined with
	// "\n".
	Question string `json:"question"`
	// Options, when not empty, are the only answers accepted. They are
	// distinct ignoring case and surrounding blanks.
	Options []string `json:"options,omitempty"`
	// Default is the answer used when an optional question is skipped. With
	// Options it is one of them, as written there.
	Default string `json:"default,omitempty"`
	// Required questions need an answer and cannot be skipped.
	Required bool `json:"required"`
}

var questionKind = Kind{
	Name: KindUserQuestion,
	Fields: []FieldSpec{
		{Name: "category", Type: TextField, Required: true},
		{Name: "question", Type: TextField, Required: true},
		{Name: "options", Type: ListField},
		{Name: "default", Type: TextField},
		{Name: "required", Type: BoolField},
	},
	Build: buildQuestion,
}

func buildQuestion(f *Fields) (any, error) {
	var errs []error
	q := &Question{Question: f.Text("question"), Options: f.List("options"), Required: f.Bool("required")}
	cat := f.Text("category")
	for _, c := range categories {
		if strings.EqualFold(cat, string(c)) {
			q.Category = c
		}
	}
	if q.Category == "" {
		errs = append(errs, &FieldError{"category", fmt.Sprintf("unknown category %q (want business, clarification, choice or confirmation)", cat)})
	}
	for i, o := range q.Options {
		if _, ok := matchOption(q.Options[:i], o); ok {
			errs = append(errs, &FieldError{"options", fmt.Sprintf("option %q is listed twice", o)})
		}
	}
	q.Default = f.Text("default")
	if q.Default != "" && len(q.Options) > 0 {
		if o, ok := matchOption(q.Options, q.Default); ok {
			q.Default = o
		} else {
			errs = append(errs, &FieldError{"default", fmt.Sprintf("default %q must be one of the options: %s", q.Default, strings.Join(q.Options, ", "))})
		}
	}
	return q, errors.Join(errs...)
}

// matchOption returns the option equal to s, ignoring case and surrounding
// blanks.
func matchOption(options []string, s string) (string, bool) {
	s = strings.TrimSpace(s)
	for _, o := range options {
		if strings.EqualFold(strings.TrimSpace(o), s) {
			return o, true
		}
	}
	return "", false
}

// ValidateAnswer checks a human's answer and returns it in canonical form:
// surrounding blanks removed and, when the question has options, the option
// as written in the question (the answer matches it ignoring case and
// surrounding blanks).
//
// An empty (or blank) answer is refused for a required question; for an
// optional one it means "no preference" and yields the default, as [Question.Skip]
// does.
//
// # Errors
//
// Refusals match [ErrInvalid]: "an answer is required",
// `answer "Other" must be one of: Subscription, Freemium`.
func (q *Question) ValidateAnswer(answer string) (string, error) {
	a := strings.TrimSpace(answer)
	if a == "" {
		if q.Required {
			return "", invalid("an answer is required")
		}
		return q.Default, nil
	}
	if len(q.Options) == 0 {
		return a, nil
	}
	if o, ok := matchOption(q.Options, a); ok {
		return o, nil
	}
	return "", invalid(fmt.Sprintf("answer %q must be one of: %s", a, strings.Join(q.Options, ", ")))
}

// Skip returns the answer to use when the question is skipped: its default
// (possibly ""). A required question cannot be skipped: the error matches
// [ErrInvalid].
func (q *Question) Skip() (string, error) {
	if q.Required {
		return "", invalid("a required question cannot be skipped")
	}
	return q.Default, nil
}
