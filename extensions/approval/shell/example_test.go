package shell_test

import (
	"errors"
	"fmt"

	"github.com/ganglion-dev/ganglion/extensions/approval/shell"
)

func ExampleParse() {
	s, err := shell.Parse(`GIT_PAGER=cat git log --format="%h %s" -n 3 && git diff $(git merge-base HEAD main)`)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range s.Commands {
		fmt.Printf("%s %q env=%q dynamic=%v\n", c.Name, c.Args, c.Env, c.Dynamic)
	}
	fmt.Println("and:", s.HasAnd, "substitution:", s.HasSubstitution)

	_, err = shell.Parse("git status &&")
	fmt.Println(err)
	// Output:
	// env ["GIT_PAGER=cat" "git" "log" "--format=%h %s" "-n" "3"] env=["GIT_PAGER=cat"] dynamic=false
	// git ["diff" "$(git merge-base HEAD main)"] env=[] dynamic=true
	// git ["merge-base" "HEAD" "main"] env=[] dynamic=false
	// and: true substitution: true
	// shell: 1:12: `&&` must be followed by a statement
}

// A program that points at the problem reads its position from the
// *Error that Parse returns.
func ExampleError() {
	src := "git status && (echo done"
	_, err := shell.Parse(src)
	var e *shell.Error
	if errors.As(err, &e) {
		fmt.Println(src)
		fmt.Printf("%*s^ %s\n", e.Col-1, "", e.Msg)
	}
	// Output:
	// git status && (echo done
	//               ^ reached EOF without matching `(` with `)`
}
