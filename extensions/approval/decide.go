package approval

import (
	"fmt"
	"strings"
	"sync"

	"github.com/expr-lang/expr/vm"
)

// vms are reusable expression machines: a run allocates none.
var vms = sync.Pool{New: func() any { return new(vm.VM) }}

// Match is a rule that matched a call.
type Match struct {
	Rule     string   `json:"rule"`
	Decision Decision `json:"decision"`
	Reason   string   `json:"reason,omitempty"`
}

// Result is a decision and why.
type Result struct {
	Decision Decision `json:"decision"`
	// Matched are the rules that matched, in file order.
	Matched []Match `json:"matched"`
	// Errors are the rules that failed to evaluate; each counts as deny.
	Errors []string `json:"errors,omitempty"`
	// Explanation says in one line why: the deciding rule, or the default.
	Explanation string `json:"explanation"`
}

// Decide evaluates every rule for the call. The strictest matching rule
// wins: deny, then ask, then approve; when none matches, the file's
// default applies. A rule that fails to evaluate counts as a deny (fail
// closed) and is listed in Errors.
func (r *Rules) Decide(c Call) Result {
	if len(c.Args) > maxArgsSize {
		return Result{Decision: Deny, Matched: []Match{},
			Explanation: fmt.Sprintf("the arguments are %d bytes, over the %d the rules judge: denied", len(c.Args), maxArgsSize)}
	}
	env := r.env(c)
	res := Result{Matched: []Match{}}
	var decisive *Match
	v := vms.Get().(*vm.VM)
	defer vms.Put(v)
	var envAny any = &env // boxed once for all rules
	for i := range r.rules {
		ru := &r.rules[i]
		if !ru.holds(&env) {
			continue
		}
		out, err := v.Run(ru.program, envAny)
		if err != nil {
			res.Errors = append(res.Errors, fmt.Sprintf("rule %q: %v", ru.name, err))
			m := Match{Rule: ru.name, Decision: Deny, Reason: "the rule failed to evaluate: " + err.Error()}
			res.Matched = append(res.Matched, m)
			continue
		}
		if b, _ := out.(bool); b {
			res.Matched = append(res.Matched, Match{Rule: ru.name, Decision: ru.decision, Reason: ru.reason})
		}
	}
	for i := range res.Matched {
		if decisive == nil || res.Matched[i].Decision.strictness() > decisive.Decision.strictness() {
			decisive = &res.Matched[i]
		}
	}
	if decisive == nil {
		res.Decision = r.Default
		res.Explanation = fmt.Sprintf("no rule matched: the default, %s", r.Default)
		return res
	}
	res.Decision = decisive.Decision
	why := fmt.Sprintf("rule %q decides %s", decisive.Rule, decisive.Decision)
	if decisive.Reason != "" {
		why += ": " + decisive.Reason
	}
	if len(res.Matched) > 1 {
		var others []string
		for _, m := range res.Matched {
			if m.Rule != decisive.Rule {
				others = append(others, fmt.Sprintf("%q (%s)", m.Rule, m.Decision))
			}
		}
		why += "; also matched " + strings.Join(others, ", ")
	}
	res.Explanation = why
	return res
}

// narrowedBy returns res, the agent's own decision, after the decision c
// of a caller's rules for the same call: the stricter of the two wins (the
// own one on a tie), and the caller's matches and errors are added, named
// "caller:rule".
func (res Result) narrowedBy(caller string, c Result) Result {
	matched := make([]Match, 0, len(res.Matched)+len(c.Matched))
	matched = append(matched, res.Matched...)
	for _, m := range c.Matched {
		m.Rule = caller + ":" + m.Rule
		matched = append(matched, m)
	}
	res.Matched = matched
	for _, e := range c.Errors {
		res.Errors = append(res.Errors, caller+": "+e)
	}
	if c.Decision.strictness() > res.Decision.strictness() {
		res.Decision = c.Decision
		res.Explanation = fmt.Sprintf("the rules of %s, which called this agent, are stricter: %s", caller, c.Explanation)
	}
	return res
}

// holds reports whether every guard of the rule holds.
func (ru *rule) holds(e *Env) bool {
	for i := range ru.guards {
		if !ru.guards[i].holds(e) {
			return false
		}
	}
	return true
}
