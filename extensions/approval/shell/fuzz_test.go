package shell_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ganglion-dev/ganglion/extensions/approval/shell"
)

// FuzzParse checks that Parse never panics, returns quickly, and either
// fails with an *shell.Error or lists between 1 and MaxCommands commands,
// the same each time.
func FuzzParse(f *testing.F) {
	for _, tc := range parseCases {
		f.Add(tc.src)
	}
	for _, tc := range errorCases {
		if len(tc.src) <= 512 {
			f.Add(tc.src)
		}
	}
	for _, src := range []string{
		"a=(1 $(b)); declare -A m=([k]=$(d)); export e=${f[$(g)]}",
		"f() { a; } > x & coproc b; select c in d; do e; done",
		"for ((i=0; i<$(n); i++)); do a; done",
		"case x in (a|b) c;; *) d;& e) ;;& esac",
		"cat <<-A <<B\n\t$(a)\n\tA\n`b`\nB\n",
		"echo ${a/$(b)/c} ${d:1:$(e)} ${!f} ${#g} \"${h[@]}\"",
		"[[ -n $(a) && b == c* ]]",
		"time -p a | ! b |& c",
		`echo "a$(b "c$(d)")" '$(e)' \$f $"g"`,
		"let a=$(b) c++",
		"x=~/a:~b y+=1 z=2 w; z[1]=2",
	} {
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		start := time.Now()
		got, err := shell.Parse(src)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("Parse(%q) took %v", src, d)
		}
		if err != nil {
			var e *shell.Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse(%q) error %v is %T, want *shell.Error", src, err, err)
			}
			if !strings.HasPrefix(err.Error(), "shell: ") {
				t.Fatalf("Parse(%q) error %q lacks the shell: prefix", src, err)
			}
			return
		}
		if n := len(got.Commands); n == 0 || n > shell.MaxCommands {
			t.Fatalf("Parse(%q) listed %d commands", src, n)
		}
		again, err := shell.Parse(src)
		if err != nil || !reflect.DeepEqual(got, again) {
			t.Fatalf("Parse(%q) is not deterministic: %+v then %+v, %v", src, got, again, err)
		}
	})
}
