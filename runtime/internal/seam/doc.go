// Package seam holds the seams the runtime's optional features plug into,
// and the registry of the features a program linked by importing their
// package (as database/sql drivers are linked).
//
// A feature that a program may leave out, with the third-party modules it
// needs, lives in a package of its own that sets its constructor here from
// an init function; package runtime calls the constructors that are set,
// and a config that asks for a feature whose constructor is not set fails
// at load with an error that names the import to add. Package runtime
// itself names none of these features' packages. The design is in
// RATIONALE.md, "The runtime as a facade".
package seam
