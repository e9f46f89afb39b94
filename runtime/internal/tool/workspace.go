package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// The limits of a [Workspace].
const (
	// defaultCommandTimeout is how long execute_command lets a command run,
	// and the most a model may ask for.
	defaultCommandTimeout = 60 * time.Second
	// defaultMaxOutput is how many bytes of file content read_file returns
	// and how many bytes of output execute_command keeps.
	defaultMaxOutput = 64 << 10
)

// Workspace makes the tools that work in one directory: file tools that
// cannot reach outside it, as they go through an [os.Root], and
// execute_command, which starts there (see [Workspace.Tools] for what that
// does and does not confine).
//
// # Concurrency
//
// A Workspace and its tools are safe for concurrent use. Close may be called
// while tools run; calls that start afterwards fail with "the workspace is
// closed".
type Workspace struct {
	dir    string
	root   *os.Root
	cfg    workspaceConfig
	procs  procDir // "" when no process records are kept
	closed atomic.Bool
}

type workspaceConfig struct {
	timeout   time.Duration
	maxOutput int
	env       []string
	callEnv   func(ctx context.Context, c *pipeline.ToolCallContext) ([]string, error)
	procDir   string
}

// WorkspaceOption configures [OpenWorkspace].
type WorkspaceOption interface {
	apply(*workspaceConfig) error
}

type workspaceOptionFunc func(*workspaceConfig) error

func (f workspaceOptionFunc) apply(c *workspaceConfig) error { return f(c) }

// WithCallEnv adds, to each execute_command call's environment, the
// "KEY=value" entries fn returns for the call: the runtime gives an
// instance's provided secrets this way.  An error fails the call with its text, so it must not
// hold a secret.
func WithCallEnv(fn func(ctx context.Context, c *pipeline.ToolCallContext) ([]string, error)) WorkspaceOption {
	return workspaceOptionFunc(func(c *workspaceConfig) error {
		c.callEnv = fn
		return nil
	})
}

// WithProcessDir keeps a record of each running execute_command call's
// process group in dir, which must belong to this workspace alone (the
// runtime uses "<data dir>.procs"). A command's group dies with the runtime
// however the runtime dies; the records are for the group that a failure of
// that mechanism leaves behind. [OpenWorkspace] creates dir if needed, kills
// every group recorded there by a process that no longer runs, if the
// group's leader is still the process recorded, and removes those records.
// On systems other than Linux it does nothing.
func WithProcessDir(dir string) WorkspaceOption {
	return workspaceOptionFunc(func(c *workspaceConfig) error {
		if dir == "" {
			return errors.New("process directory is empty")
		}
		c.procDir = dir
		return nil
	})
}

// OpenWorkspace opens dir, which must be an existing directory, as a
// workspace. It creates nothing but the directory of [WithProcessDir]. The
// caller closes the workspace when done.
func OpenWorkspace(dir string, opts ...WorkspaceOption) (*Workspace, error) {
	cfg := workspaceConfig{timeout: defaultCommandTimeout, maxOutput: defaultMaxOutput}
	for _, o := range opts {
		if err := o.apply(&cfg); err != nil {
			return nil, fmt.Errorf("open workspace: %w", err)
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open workspace %q: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("open workspace: %q is not a directory", dir)
	}
	var procs procDir
	if cfg.procDir != "" && recordsSupported {
		if procs, err = openProcDir(cfg.procDir); err != nil {
			return nil, fmt.Errorf("open workspace: %w", err)
		}
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("open workspace: %w", err)
	}
	return &Workspace{dir: abs, root: root, cfg: cfg, procs: procs}, nil
}

// Dir returns the absolute path of the workspace directory.
func (w *Workspace) Dir() string { return w.dir }

// Close releases the workspace. Tools called afterwards fail. Close is
// idempotent.
func (w *Workspace) Close() error {
	if w.closed.Swap(true) {
		return nil
	}
	return w.root.Close()
}

// Tools returns the workspace's tools, in this order:
//
//   - read_file (read): the text of a file, or some of its lines;
//   - write_file (write): create or replace a file, creating its directory;
//   - list_files (read): the entries of a directory, optionally recursive;
//   - execute_command (execute): run a shell command in the workspace.
//
// Paths are relative to the workspace. The file tools refuse absolute paths,
// paths that climb out with "..", and symbolic links that lead outside
// (symbolic links must be relative to be followed at all).
//
// execute_command runs "sh -c" with the workspace as its working directory,
// in a process group of its own, which is killed when the command times out,
// when ctx is cancelled, and when the shell exits (so background children do
// not outlive the call), and which dies with the process that ran it, even
// one killed with SIGKILL. A small watcher process leads the group, so the
// shell is a member of it, not its leader: "kill 0" reaches the whole group,
// "kill -- -$$" does not. Its environment holds only PATH and what
// [WithCallEnv] adds for the call. The shell itself is not confined: it can read and write
// anywhere the process can. Approval rules are what gate it.
//
// # Errors
//
// The tools never return a Go error: every failure is a result with IsError
// set and a message for the model, such as
//
//	path "../x" escapes the workspace
func (w *Workspace) Tools() []pipeline.Tool {
	return []pipeline.Tool{w.readFileTool(), w.writeFileTool(), w.listFilesTool(), w.executeCommandTool()}
}

// WorkspaceToolNames are the names of the tools [Workspace.Tools] returns,
// sorted. A config can be checked against them before a workspace is open.
var WorkspaceToolNames = []string{"execute_command", "list_files", "read_file", "write_file"}

// newTool returns the tool of spec whose function checks the arguments,
// decodes them into A, calls run, and reports every failure as a result with
// IsError set.
func newTool[A any](w *Workspace, spec pipeline.ToolSpec, run func(ctx context.Context, args A) (string, error)) pipeline.Tool {
	t := pipeline.Tool{ToolSpec: spec}
	t.Func = func(ctx context.Context, c *pipeline.ToolCallContext) (*pipeline.ToolResult, error) {
		res := &pipeline.ToolResult{CallID: c.CallID(), Name: c.Name()}
		if res.Name == "" {
			res.Name = spec.Name
		}
		text, err := func() (string, error) {
			if w.closed.Load() {
				return "", errClosed
			}
			if err := CheckArguments(t, c.Arguments()); err != nil {
				return "", err
			}
			var a A
			if err := json.Unmarshal(c.Arguments(), &a); err != nil {
				// The schema has passed them: only a number too large for
				// a float64 gets here.
				var te *json.UnmarshalTypeError
				if errors.As(err, &te) {
					return "", fmt.Errorf("arguments do not match the schema: /%s: %s is out of range", te.Field, te.Value)
				}
				return "", fmt.Errorf("arguments do not match the schema: %v", err)
			}
			return run(ctx, a)
		}()
		if err != nil {
			res.Content, res.IsError = err.Error(), true
		} else {
			res.Content = text
		}
		return res, nil
	}
	return t
}

var errClosed = errors.New("the workspace is closed")

// checkPath refuses paths that are lexically outside the workspace. Symbolic
// links are the os.Root's business; see pathError.
func checkPath(p string) error {
	if p == "" {
		return errors.New("path is empty")
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") {
		return fmt.Errorf("path %q is absolute; paths are relative to the workspace", p)
	}
	if !filepath.IsLocal(p) {
		return fmt.Errorf("path %q escapes the workspace", p)
	}
	return nil
}

// pathError turns an error from the os.Root into a message that names the
// path the model wrote, without the system call's name.
func (w *Workspace) pathError(p string, err error) error {
	switch {
	case isEscape(err):
		return fmt.Errorf("path %q escapes the workspace", p)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("path %q does not exist", p)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("path %q: permission denied", p)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("path %q: a parent is not a directory", p)
	case errors.Is(err, fs.ErrClosed) || w.closed.Load():
		return errClosed
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("path %q: %v", p, err)
}

// isEscape reports whether err is os.Root's refusal to leave the root. The
// os package does not export that error, so it is recognised by its text;
// the tests pin it.
func isEscape(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if err.Error() == "path escapes from parent" {
			return true
		}
	}
	return false
}
