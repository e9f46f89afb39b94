// Package approval is the README's approval rules example: rules.yaml, a
// starter rules file, and an agent on the scripted model whose command the
// rules leave to a human. Its test answers the approval both ways and
// checks that the resumed turn answers from the call's result, or from its
// refusal, rather than asking again.
package approval
