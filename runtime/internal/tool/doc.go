// Package tool holds what the runtime needs to offer tools to models: a
// [Registry] of tools by name, [CheckArguments] to check a call's arguments
// against a tool's JSON Schema, and the built-in workspace tools that read,
// write and list files and run commands in one directory ([OpenWorkspace]).
//
// A tool is a [pipeline.Tool]: a spec the model sees and a function that is
// the innermost layer of the toolCall chain. This package makes and keeps
// tools; the pipeline runs them.
//
// # Confinement
//
// The file tools (read_file, write_file, list_files) reach the disk only
// through an [os.Root] opened on the workspace directory. Before that, a
// path is checked lexically: absolute paths and paths that climb out with
// ".." are refused with a message naming the path. The os.Root then refuses
// any symbolic link that leads outside the directory, at any component of
// the path, without a window between check and use. Symbolic links that
// stay inside are followed if they are relative; absolute links are refused
// even when they point inside. os.Root does not stop bind mounts, /proc
// files or device files inside the directory.
//
// execute_command is not confined the same way: it starts sh -c in the
// workspace directory with a minimal environment, in its own process group,
// and kills the whole group on timeout, on cancellation and when the shell
// exits; but the shell can read and write anything the process can.
// Approval rules, not this package, decide whether a command runs.
//
// # Process groups and crashes
//
// A command's group also dies when the process that runs it dies, however
// it dies: a watcher process leads the group and kills it when a pipe that
// only the runtime holds closes, and the shell gets a parent-death signal.
// With [WithProcessDir], each running group is also recorded on disk, and
// the next [OpenWorkspace] kills any group a process left behind whose
// leader is still the process recorded (a check against PID reuse).
//
// # Errors
//
// Tool functions made here never return a Go error. Every failure is a
// [pipeline.ToolResult] with IsError set and text for the model, which can
// correct itself and retry.
//
// # Concurrency
//
// [Registry], [CheckArguments], [Workspace] and the workspace tools are safe
// for concurrent use: the tool calls of a step may run at the same time.
package tool
