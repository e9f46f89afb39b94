package protocol_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions/protocol"
	"github.com/ganglion-dev/ganglion/runtime"
	"github.com/ganglion-dev/ganglion/runtime/config"
)

func ExampleParse() {
	output := `I need two things before I go on.
[USER_QUESTION]
category: choice
question: Which database should the service use?
options:
  - PostgreSQL
  - SQLite
default: sqlite
[/USER_QUESTION]
[DEPENDENCY_REQUEST]
type: api_key
name: OPENAI API KEY
description: For embeddings
[/DEPENDENCY_REQUEST]
`
	blocks, errs := protocol.Parse(protocol.DefaultRegistry(), output)
	for _, b := range blocks {
		q := b.Value.(*protocol.Question)
		fmt.Printf("%s at lines %d-%d: %q %q, default %q\n", b.Kind, b.StartLine, b.EndLine, q.Question, q.Options, q.Default)
	}
	for _, err := range errs {
		fmt.Println(err)
	}
	// Output:
	// USER_QUESTION at lines 2-9: "Which database should the service use?" ["PostgreSQL" "SQLite"], default "SQLite"
	// line 12: name "OPENAI API KEY" must be an environment variable name for type api_key (1 to 64 letters, digits and _, not starting with a digit)
}

func ExampleRegistry_Register() {
	reg := protocol.DefaultRegistry()
	type Task struct {
		Title  string
		Tags   []string
		Urgent bool
	}
	err := reg.Register(protocol.Kind{
		Name: "TASK_CREATE",
		Fields: []protocol.FieldSpec{
			{Name: "title", Type: protocol.TextField, Required: true},
			{Name: "tags", Type: protocol.ListField},
			{Name: "urgent", Type: protocol.BoolField},
		},
		Build: func(f *protocol.Fields) (any, error) {
			if len(f.Text("title")) > 20 {
				return nil, &protocol.FieldError{Field: "title", Msg: "title is longer than 20 characters"}
			}
			return &Task{Title: f.Text("title"), Tags: f.List("tags"), Urgent: f.Bool("urgent")}, nil
		},
	})
	if err != nil {
		fmt.Println(err)
	}
	blocks, errs := protocol.Parse(reg, `[TASK_CREATE]
title: Write the docs
tags: [docs, "p1, urgent"]
urgent: yes
[/TASK_CREATE]
[TASK_CREATE]
title: `+strings.Repeat("very ", 5)+`long
[/TASK_CREATE]
`)
	fmt.Printf("%+v\n", blocks[0].Value)
	fmt.Println(errs[0])
	fmt.Println(reg.Register(protocol.Kind{Name: "TASK_CREATE"}))
	// Output:
	// &{Title:Write the docs Tags:[docs p1, urgent] Urgent:true}
	// line 7: title is longer than 20 characters
	// register kind "TASK_CREATE": already registered
}

func ExampleQuestion_ValidateAnswer() {
	q := &protocol.Question{
		Category: protocol.CategoryBusiness,
		Question: "What pricing model?",
		Options:  []string{"Subscription", "Freemium", "Ad-based"},
		Default:  "Freemium",
	}
	fmt.Println(q.ValidateAnswer(" subscription "))
	fmt.Println(q.ValidateAnswer("Other"))
	fmt.Println(q.Skip())
	// Output:
	// Subscription <nil>
	//  answer "Other" must be one of: Subscription, Freemium, Ad-based
	// Freemium <nil>
}

func ExampleValidateDependencyValue() {
	key := &protocol.DependencyRequest{Type: protocol.TypeAPIKey, Name: "OPENAI_API_KEY", Required: true}
	_, err := protocol.ValidateDependencyValue(key, "sk-secret", nil)
	fmt.Println(err)
	_, err = protocol.ValidateDependencyValue(key, "sk-not valid!", nil)
	fmt.Println(err) // never the value itself
	// A refusal, as opposed to a failure to check: ask the human again.
	fmt.Println(errors.Is(err, protocol.ErrInvalid))
	pkg := &protocol.DependencyRequest{Type: protocol.TypePackage, Name: "merge helper"}
	fmt.Println(protocol.ValidateDependencyValue(pkg, "lodash.merge", nil))
	// Output:
	// <nil>
	// value for "OPENAI_API_KEY" is not a valid API key: only letters, digits, _ and - are allowed
	// true
	// lodash.merge <nil>
}

// A UI picks how to ask a question by its category.
func ExampleCategory() {
	blocks, _ := protocol.Parse(protocol.DefaultRegistry(), `[USER_QUESTION]
category: choice
question: Which database?
options: [PostgreSQL, SQLite]
[/USER_QUESTION]
[USER_QUESTION]
category: confirmation
question: Drop the old tables?
[/USER_QUESTION]
[USER_QUESTION]
category: clarification
question: What should "recent" mean?
[/USER_QUESTION]
`)
	for _, b := range blocks {
		if b.Kind != protocol.KindUserQuestion {
			continue
		}
		q := b.Value.(*protocol.Question)
		switch q.Category {
		case protocol.CategoryChoice:
			fmt.Printf("buttons %q: %s\n", q.Options, q.Question)
		case protocol.CategoryConfirmation:
			fmt.Println("yes or no:", q.Question)
		case protocol.CategoryClarification, protocol.CategoryBusiness:
			fmt.Println("a text box:", q.Question)
		}
	}
	// Output:
	// buttons ["PostgreSQL" "SQLite"]: Which database?
	// yes or no: Drop the old tables?
	// a text box: What should "recent" mean?
}

// A UI picks the input a dependency needs by its type; the value of a
// secret one is masked as it is typed.
func ExampleDependencyType() {
	blocks, _ := protocol.Parse(protocol.DefaultRegistry(), `[DEPENDENCY_REQUEST]
type: env_variable
name: DATABASE_URL
description: Where the data lives
[/DEPENDENCY_REQUEST]
[DEPENDENCY_REQUEST]
type: service
name: search
description: The search service to query
[/DEPENDENCY_REQUEST]
[DEPENDENCY_REQUEST]
type: file
name: schema
description: The schema to migrate from
[/DEPENDENCY_REQUEST]
[DEPENDENCY_REQUEST]
type: permission
name: deploy
description: May I deploy to staging?
[/DEPENDENCY_REQUEST]
`)
	for _, b := range blocks {
		if b.Kind != protocol.KindDependencyRequest {
			continue
		}
		d := b.Value.(*protocol.DependencyRequest)
		input := "a text field"
		switch d.Type {
		case protocol.TypeAPIKey, protocol.TypeEnvVariable:
			input = "a masked field"
		case protocol.TypeService:
			input = "a URL field"
		case protocol.TypeFile:
			input = "a file picker"
		case protocol.TypePermission:
			input = "yes or no"
		}
		fmt.Printf("%s (secret %v): %s\n", d.Name, d.Secret(), input)
	}
	// Output:
	// DATABASE_URL (secret true): a masked field
	// search (secret false): a URL field
	// schema (secret false): a file picker
	// deploy (secret false): yes or no
}

// An app acts on the blocks the extension does not pause on, and watches
// the model's mistakes, through the runtime's events. The scripted model
// here first writes a PHASE_COMPLETE block without its summary, reads the
// extension's correction, and writes it again.
func Example_events() {
	dir, err := os.MkdirTemp("", "protocol-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	script := `
agents:
  a:
    turns:
      - steps:
          - text: |
              [PHASE_COMPLETE]
              phase: design
              [/PHASE_COMPLETE]
          - text: |
              [PHASE_COMPLETE]
              phase: design
              summary: The schema is ready.
              artifacts: [docs/schema.md]
              [/PHASE_COMPLETE]
`
	if err := os.WriteFile(filepath.Join(dir, "script.yaml"), []byte(script), 0o644); err != nil {
		fmt.Println(err)
		return
	}
	cfg, err := config.Parse(filepath.Join(dir, "ganglion.yaml"), []byte(`
model: {provider: scripted, script: script.yaml}
agents:
  - name: a
    extensions: [{name: protocol}]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	rt, err := runtime.New(ctx, runtime.WithConfig(cfg), runtime.WithMemoryStore())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	rt.Events().Subscribe("protocol.*", func(ev events.Event) {
		switch d := ev.Data.(type) {
		case protocol.MistakeEvent:
			fmt.Printf("step %d: mistake %d in a row:\n%s\n", d.Step, d.Count, strings.Join(d.Errors, "\n"))
		case protocol.BlockEvent:
			if d.Kind == protocol.KindPhaseComplete {
				p := d.Value.(*protocol.PhaseComplete)
				fmt.Printf("step %d: phase %s complete: %s %q\n", d.Step, p.Phase, p.Summary, p.Artifacts)
			}
		}
	})
	if _, err := rt.Send(ctx, "a", "k", runtime.UserMessage("go")); err != nil {
		fmt.Println(err)
	}
	// Output:
	// step 1: mistake 1 in a row:
	// - line 1: [PHASE_COMPLETE] is missing the required field "summary"
	// step 2: phase design complete: The schema is ready. ["docs/schema.md"]
}
