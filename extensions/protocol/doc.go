// Package protocol parses and validates the protocol blocks an agent's model
// writes in its output to ask the host for something: a question for the
// user (USER_QUESTION), a dependency such as a secret or a file
// (DEPENDENCY_REQUEST), or the report that a phase of work is done
// (PHASE_COMPLETE): the parser and validation layer, and the built-in
// protocol extension ([Factory]) that reads the model's output while it
// streams and pauses the turn on a question or a dependency until a human
// answers.
//
// # Blocks
//
// A block is an opening tag line, field lines, and a closing tag line:
//
//	[USER_QUESTION]
//	category: business
//	question: What pricing model?
//	options: [Subscription, Freemium, "Ads, with a free tier"]
//	default: freemium
//	required: false
//	[/USER_QUESTION]
//
// A tag line holds the tag alone: "[KIND]" or "[/KIND]", with blanks allowed
// around it, at most 256 bytes. KIND must be registered (see [Registry]);
// names are upper case. Everything else is text and is passed through
// unchanged: prose that mentions [USER_QUESTION] inside a sentence, "[NOTE]"
// when NOTE is not registered, "[user_question]", markdown links. Tags inside
// a markdown code fence are still tags.
//
// # Fields
//
// A field line is "name: value": the name is an identifier at the start of
// the line (blanks before it allowed), matched ignoring case, followed at once
// by a colon, and the colon by a blank or the end of the line. So the value
// may hold colons ("question: Meet at 12:30?"), and a line such as
// "https://example.com" or "12:30" is not a field line. A field is matched
// only at the start of a line: "category: x" inside the text of another
// field changes nothing.
//
// Each kind declares its fields (a [FieldSpec]: name, type, required), of
// three types:
//
//   - text: the rest of the line. The lines that follow, up to the next field
//     line, continue it; they are joined with "\n" and the whole is trimmed.
//     A continuation line that looks like a field line ("Note: ...") is a
//     field line, and an unknown field is an error: reword it.
//   - bool: true, false, yes or no, in any case.
//   - list: a non-empty list, written inline or as "- item" lines.
//
// An inline list separates its items with commas; a double-quoted item may
// hold commas and the escapes \" and \\. The other form puts "- item" lines
// under the field written with an empty value; its items are taken as
// written, quotes included. These are the same list:
//
//	options: [PostgreSQL, "MySQL, or MariaDB"]
//
//	options:
//	  - PostgreSQL
//	  - MySQL, or MariaDB
//
// A field that is not declared, a field given twice, a required field
// missing (or, for text, empty), a bool that is not one, an empty list or
// list item, and text where no field can continue are errors.
//
// # Kinds
//
// A [Registry] holds the kinds the scanner recognises; [DefaultRegistry]
// holds the three built-in ones. Each [Kind] has a name, its field specs and
// a Build function that checks the parsed [Fields] and returns a typed value:
// *[Question], *[DependencyRequest] or *[PhaseComplete] for the built-ins.
// Other extensions add kinds at run time with [Registry.Register]:
//
//	err := reg.Register(protocol.Kind{
//		Name:   "TASK_CREATE",
//		Fields: []protocol.FieldSpec{{Name: "title", Type: protocol.TextField, Required: true}},
//		Build:  func(f *protocol.Fields) (any, error) { return f.Text("title"), nil },
//	})
//
// A kind's rules beyond syntax live in its Build: for USER_QUESTION, the
// category is one of business, clarification, choice or confirmation, the
// options are distinct, and the default, when there are options, is one of
// them (matched ignoring case and surrounding blanks, stored as the option is
// written); for DEPENDENCY_REQUEST, the type is one of api_key, env_variable,
// service, file, permission or package, and the name of an api_key or
// env_variable is an environment variable name, since tools receive the value
// under it.
//
// # Scanning
//
// The scanner reads model output as it streams, in chunks cut at any byte,
// and finds text to pass through, complete valid blocks, and errors. Text is
// emitted as soon as it cannot be part of a tag line. Blocks are buffered up
// to max_block_size (64 KiB by default, see the extension's settings); a longer block is
// an error and the rest of it is read as text. The scanner never panics on
// input, and its work is linear in the input. [Parse] scans a whole text.
//
// The text events, the Raw text of the blocks and the Raw text of the failed
// blocks, in order, are exactly the input.
//
// # Errors
//
// A block of a registered kind that has problems yields one [Error] per
// problem (at most 20, then a count), never a [Block]. Syntax is checked
// first; the kind's Build runs only on a block whose syntax is valid. The
// messages are written for the model to read and correct its output:
//
//	line 3: [USER_QUESTION] is missing the required field "question"
//	line 5: unknown field "questoin" in [USER_QUESTION] (known: category, question, options, default, required)
//	line 4: unknown category "biz" (want business, clarification, choice or confirmation)
//	line 6: field "required" must be true, false, yes or no, not "maybe"
//	line 9: [/DEPENDENCY_REQUEST] does not close [USER_QUESTION] opened at line 2
//	line 9: [/USER_QUESTION] has no matching [USER_QUESTION] above it
//	[DEPENDENCY_REQUEST] opened at line 7 is never closed
//	[USER_QUESTION] opened at line 2 is longer than 65536 bytes
//
// A block left open when another block opens, or at the end of the output,
// is never closed.
//
// # Answers and values
//
// When a human answers, [Question.ValidateAnswer], [Question.Skip] and
// [ValidateDependencyValue] check the answer and return its canonical form.
// Their refusals match [ErrInvalid]. No error ever holds a provided
// dependency value: it may be a secret.
//
// # The extension
//
// The extension ([Factory]), registered with the runtime as "protocol", acts
// on the blocks of each step: questions and dependencies become pending
// items and pause the turn; other kinds are published as "protocol.block"
// events ([BlockEvent]); problems go back to the model as a correction
// ("protocol.mistake", [MistakeEvent]), and too many in a row pause the
// turn for a human's guidance. Its pending kinds say what
// answers mean: see [Factory] for the timeouts. The value of an api_key,
// env_variable or service dependency is kept secret, and commands receive it
// in an environment variable: the dependency's name for api_key and
// env_variable; for a service, the name upper cased with every character
// other than a letter or digit made "_" (prefixed "SERVICE_" when that
// leaves it empty or starting with a digit, cut to 64 bytes). Its settings,
// in an agent's config:
//
//	extensions:
//	  - name: protocol
//	    config:
//	      timeout: 1h               # how long a question or dependency waits
//	      question_timeout: 30m     # overrides timeout for questions
//	      dependency_timeout: 2h    # overrides timeout for dependencies
//	      mistake_limit: 3          # malformed blocks in a row before a human is asked
//	      max_block_size: 65536
//
// # Concurrency
//
// A [Registry] is safe for concurrent use. The values ([Question],
// [DependencyRequest], [PhaseComplete], [Fields]) are not changed after
// parsing; their methods are safe for concurrent use.
package protocol
