// Package envref reads the references a config value makes to values kept
// out of the file: ${NAME}, an environment variable of the runtime's
// process, and ${secret:NAME}, a secret provided to the instance that uses
// the value.
//
// Nothing else in a value is special: a lone '$' or "$NAME" without braces
// stays as it is written, so that a header or an argument holding a dollar
// sign means what the file says.
package envref
