package protocol_test

import (
	"fmt"
	"strings"

	"github.com/ganglion-dev/ganglion/extensions/protocol"
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
		Title string
		Tags  []string
	}
	err := reg.Register(protocol.Kind{
		Name: "TASK_CREATE",
		Fields: []protocol.FieldSpec{
			{Name: "title", Type: protocol.TextField, Required: true},
			{Name: "tags", Type: protocol.ListField},
		},
		Build: func(f *protocol.Fields) (any, error) {
			if len(f.Text("title")) > 20 {
				return nil, &protocol.FieldError{Field: "title", Msg: "title is longer than 20 characters"}
			}
			return &Task{Title: f.Text("title"), Tags: f.List("tags")}, nil
		},
	})
	if err != nil {
		fmt.Println(err)
	}
	blocks, errs := protocol.Parse(reg, `[TASK_CREATE]
title: Write the docs
tags: [docs, "p1, urgent"]
[/TASK_CREATE]
[TASK_CREATE]
title: `+strings.Repeat("very ", 5)+`long
[/TASK_CREATE]
`)
	fmt.Printf("%+v\n", blocks[0].Value)
	fmt.Println(errs[0])
	fmt.Println(reg.Register(protocol.Kind{Name: "TASK_CREATE"}))
	// Output:
	// &{Title:Write the docs Tags:[docs p1, urgent]}
	// line 6: title is longer than 20 characters
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
	pkg := &protocol.DependencyRequest{Type: protocol.TypePackage, Name: "merge helper"}
	fmt.Println(protocol.ValidateDependencyValue(pkg, "lodash.merge", nil))
	// Output:
	// <nil>
	// value for "OPENAI_API_KEY" is not a valid API key: only letters, digits, _ and - are allowed
	// lodash.merge <nil>
}
