package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ganglion-dev/ganglion/pipeline"
	"github.com/ganglion-dev/ganglion/runtime/internal/tool"
)

// fixture is a workspace with files, directories and symbolic links, next
// to a directory it must not reach:
//
//	ws/a.txt, partial.txt, empty.txt, bin.dat, sub/a.txt, sub/deep/b.txt, emptydir/
//	ws/in-link -> sub/a.txt, ws/in-dir -> sub                  (stay inside)
//	ws/out-link -> ../outside/secret.txt, ws/out-dir -> ../outside, ws/abs-link -> /…/outside/secret.txt
//	outside/secret.txt
type fixture struct {
	ws      *tool.Workspace
	dir     string
	outside string
	tools   map[string]pipeline.Tool
}

func newFixture(t *testing.T, opts ...tool.WorkspaceOption) *fixture {
	t.Helper()
	base := t.TempDir()
	dir, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	files := map[string]string{
		"ws/a.txt":           "one\ntwo\nthree\n",
		"ws/partial.txt":     "x\ny",
		"ws/empty.txt":       "",
		"ws/bin.dat":         "ab\x00cd",
		"ws/sub/a.txt":       "inside\n",
		"ws/sub/deep/b.txt":  "deep\n",
		"outside/secret.txt": "secret\n",
	}
	for name, content := range files {
		p := filepath.Join(base, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "emptydir"), 0o755); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"in-link":  "sub/a.txt",
		"in-dir":   "sub",
		"out-link": "../outside/secret.txt",
		"out-dir":  "../outside",
		"abs-link": filepath.Join(outside, "secret.txt"),
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := tool.OpenWorkspace(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	f := &fixture{ws: ws, dir: dir, outside: outside, tools: map[string]pipeline.Tool{}}
	for _, tl := range ws.Tools() {
		f.tools[tl.Name] = tl
	}
	return f
}

// call runs the tool called name with args and checks the result's identity.
func (f *fixture) call(t *testing.T, name, args string) *pipeline.ToolResult {
	t.Helper()
	return callTool(t, context.Background(), f.tools[name], args)
}

func callTool(t *testing.T, ctx context.Context, tl pipeline.Tool, args string) *pipeline.ToolResult {
	t.Helper()
	if tl.Func == nil {
		t.Fatalf("no tool")
	}
	c := pipeline.NewToolCallContext(pipeline.ToolCallInfo{Call: pipeline.ToolCall{ID: "call-1", Name: tl.Name, Arguments: json.RawMessage(args)}})
	res, err := tl.Func(ctx, c)
	if err != nil {
		t.Fatalf("%s returned a Go error: %v", tl.Name, err)
	}
	if res.CallID != "call-1" || res.Name != tl.Name {
		t.Errorf("result is for %q %q, want call-1 %q", res.CallID, res.Name, tl.Name)
	}
	return res
}

type toolCase struct {
	name    string
	args    string
	want    string // content of a successful result
	wantErr string // content of an error result
}

func (f *fixture) run(t *testing.T, tool string, tests []toolCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.call(t, tool, tt.args)
			want := tt.want
			if tt.wantErr != "" {
				want = tt.wantErr
			}
			if res.Content != want || res.IsError != (tt.wantErr != "") {
				t.Errorf("%s(%s) = (IsError %v)\n%s\nwant (IsError %v)\n%s", tool, tt.args, res.IsError, res.Content, tt.wantErr != "", want)
			}
		})
	}
}

// escapeCases are the ways out of the workspace that every file tool refuses.
func escapeCases(tool, extra string) []toolCase {
	paths := []struct{ name, path, wantErr string }{
		{"dot-dot", "../x", `path "../x" escapes the workspace`},
		{"dot-dot inside", "a/../../x", `path "a/../../x" escapes the workspace`},
		{"dot-dot to the outside file", "../outside/secret.txt", `path "../outside/secret.txt" escapes the workspace`},
		{"absolute", "/etc/passwd", `path "/etc/passwd" is absolute; paths are relative to the workspace`},
		{"symlink to outside file", "out-link", `path "out-link" escapes the workspace`},
		{"through symlinked dir", "out-dir/secret.txt", `path "out-dir/secret.txt" escapes the workspace`},
		{"absolute symlink", "abs-link", `path "abs-link" escapes the workspace`},
	}
	if tool == "list_files" {
		paths = append(paths, struct{ name, path, wantErr string }{"symlinked dir", "out-dir", `path "out-dir" escapes the workspace`})
	}
	var cases []toolCase
	for _, p := range paths {
		cases = append(cases, toolCase{name: "escape/" + p.name, args: fmt.Sprintf(`{"path":%q%s}`, p.path, extra), wantErr: p.wantErr})
	}
	return cases
}

func TestReadFile(t *testing.T) {
	f := newFixture(t)
	tests := []toolCase{
		{name: "whole file", args: `{"path":"a.txt"}`, want: "one\ntwo\nthree\n"},
		{name: "dot slash", args: `{"path":"./sub/../a.txt"}`, want: "one\ntwo\nthree\n"},
		{name: "from offset", args: `{"path":"a.txt","offset":2}`, want: "two\nthree\n"},
		{name: "offset and limit", args: `{"path":"a.txt","offset":2,"limit":1}`, want: "two\n"},
		{name: "limit beyond end", args: `{"path":"a.txt","limit":10}`, want: "one\ntwo\nthree\n"},
		{name: "last line without newline", args: `{"path":"partial.txt","offset":2}`, want: "y"},
		{name: "empty file", args: `{"path":"empty.txt"}`, want: ""},
		{name: "symlink inside", args: `{"path":"in-link"}`, want: "inside\n"},
		{name: "through symlinked dir inside", args: `{"path":"in-dir/deep/b.txt"}`, want: "deep\n"},
		{name: "offset past end", args: `{"path":"a.txt","offset":5}`, wantErr: `path "a.txt": offset 5 is past the end of the file (3 lines)`},
		{name: "offset past partial end", args: `{"path":"partial.txt","offset":3}`, wantErr: `path "partial.txt": offset 3 is past the end of the file (2 lines)`},
		{name: "directory", args: `{"path":"sub"}`, wantErr: `path "sub" is a directory; use list_files to see what it holds`},
		{name: "binary", args: `{"path":"bin.dat"}`, wantErr: `path "bin.dat" is a binary file; read_file reads text only`},
		{name: "missing", args: `{"path":"nope.txt"}`, wantErr: `path "nope.txt" does not exist`},
		{name: "parent is a file", args: `{"path":"a.txt/x"}`, wantErr: `path "a.txt/x": a parent is not a directory`},
		// Schema violations.
		{name: "schema/no path", args: `{}`, wantErr: `arguments do not match the schema: (root): missing property 'path'`},
		{name: "schema/empty path", args: `{"path":""}`, wantErr: `arguments do not match the schema: /path: minLength: got 0, want 1`},
		{name: "schema/offset not an integer", args: `{"path":"a.txt","offset":"2"}`, wantErr: `arguments do not match the schema: /offset: got string, want integer`},
		{name: "schema/offset zero", args: `{"path":"a.txt","offset":0}`, wantErr: `arguments do not match the schema: /offset: minimum: got 0, want 1`},
		{name: "schema/offset too large", args: `{"path":"a.txt","offset":1e400}`, wantErr: `arguments do not match the schema: /offset: number 1e400 is out of range`},
		{name: "schema/huge offset", args: `{"path":"a.txt","offset":1e999999}`, wantErr: `arguments do not match the schema: /offset: number 1e999999 is out of range`},
		{name: "schema/unknown property", args: `{"path":"a.txt","lines":3}`, wantErr: `arguments do not match the schema: (root): additional properties 'lines' not allowed`},
		{name: "schema/malformed", args: `{"path":"a.txt"`, wantErr: `arguments are not valid JSON: unexpected end of JSON input`},
	}
	f.run(t, "read_file", append(tests, escapeCases("read_file", "")...))
}

func TestReadFileTruncated(t *testing.T) {
	f := newFixture(t, tool.WithMaxOutput(10))
	files := map[string]string{
		"lines.txt": "0123\n4567\n89ab\n",
		"long.txt":  "abcdefghijklmnop\n",
		"utf8.txt":  "ééééééé\n", // 2 bytes each: the cut must not split one
		"fits.txt":  "012345678\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(f.dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f.run(t, "read_file", []toolCase{
		{name: "cut at a line", args: `{"path":"lines.txt"}`, want: "0123\n4567\n[truncated: showing lines 1-2; output is limited to 10 bytes; read on with offset 3]"},
		{name: "read on", args: `{"path":"lines.txt","offset":3}`, want: "89ab\n"},
		{name: "line too long", args: `{"path":"long.txt"}`, want: "abcdefghij\n[truncated: line 1 is longer than the output limit of 10 bytes]"},
		{name: "no split character", args: `{"path":"utf8.txt"}`, want: "ééééé\n[truncated: line 1 is longer than the output limit of 10 bytes]"},
		{name: "exactly the limit", args: `{"path":"fits.txt"}`, want: "012345678\n"},
	})
}

func TestWriteFile(t *testing.T) {
	f := newFixture(t)
	if err := os.Chmod(filepath.Join(f.dir, "a.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		toolCase
		file     string // where the content must land, relative to the workspace
		content  string
		wantMode fs.FileMode
	}{
		{toolCase: toolCase{name: "new file", args: `{"path":"new.txt","content":"hello"}`, want: `wrote 5 bytes to "new.txt"`}, file: "new.txt", content: "hello", wantMode: 0o644},
		{toolCase: toolCase{name: "new dirs", args: `{"path":"n1/n2/f.txt","content":"deep"}`, want: `wrote 4 bytes to "n1/n2/f.txt"`}, file: "n1/n2/f.txt", content: "deep"},
		{toolCase: toolCase{name: "replace keeps mode", args: `{"path":"a.txt","content":"new\n"}`, want: `wrote 4 bytes to "a.txt"`}, file: "a.txt", content: "new\n", wantMode: 0o600},
		{toolCase: toolCase{name: "empty content", args: `{"path":"sub/a.txt","content":""}`, want: `wrote 0 bytes to "sub/a.txt"`}, file: "sub/a.txt", content: ""},
		{toolCase: toolCase{name: "through symlink inside", args: `{"path":"in-dir/deep/b.txt","content":"via link"}`, want: `wrote 8 bytes to "in-dir/deep/b.txt"`}, file: "sub/deep/b.txt", content: "via link"},
		{toolCase: toolCase{name: "directory", args: `{"path":"sub","content":"x"}`, wantErr: `path "sub" is a directory`}},
		{toolCase: toolCase{name: "parent is a file", args: `{"path":"partial.txt/x","content":"x"}`, wantErr: `path "partial.txt/x": a parent is not a directory`}},
		{toolCase: toolCase{name: "schema/no content", args: `{"path":"x.txt"}`, wantErr: `arguments do not match the schema: (root): missing property 'content'`}},
		{toolCase: toolCase{name: "schema/nothing", args: `{}`, wantErr: `arguments do not match the schema: (root): missing properties 'path', 'content'`}},
		{toolCase: toolCase{name: "schema/content not a string", args: `{"path":"x.txt","content":["a"]}`, wantErr: `arguments do not match the schema: /content: got array, want string`}},
		{toolCase: toolCase{name: "schema/not an object", args: `"x.txt"`, wantErr: `arguments must be a JSON object, got string`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.run(t, "write_file", []toolCase{tt.toolCase})
			if tt.file == "" {
				return
			}
			p := filepath.Join(f.dir, tt.file)
			got, err := os.ReadFile(p)
			if err != nil || string(got) != tt.content {
				t.Errorf("%s holds %q (%v), want %q", tt.file, got, err, tt.content)
			}
			if tt.wantMode != 0 {
				if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != tt.wantMode {
					t.Errorf("%s has mode %v (%v), want %v", tt.file, fi.Mode().Perm(), err, tt.wantMode)
				}
			}
		})
	}
	// The symbolic link written through is still a link.
	if fi, err := os.Lstat(filepath.Join(f.dir, "in-dir")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("in-dir is no longer a symbolic link (%v)", err)
	}
	// No temporary file is left behind.
	_ = filepath.WalkDir(f.dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}

func TestWriteFileEscapes(t *testing.T) {
	f := newFixture(t)
	f.run(t, "write_file", escapeCases("write_file", `,"content":"pwned"`))
	got, err := os.ReadFile(filepath.Join(f.outside, "secret.txt"))
	if err != nil || string(got) != "secret\n" {
		t.Errorf("outside/secret.txt holds %q (%v), want it untouched", got, err)
	}
	entries, _ := os.ReadDir(f.outside)
	if len(entries) != 1 {
		t.Errorf("outside holds %d entries, want only secret.txt", len(entries))
	}
	if _, err := os.Lstat(filepath.Join(filepath.Dir(f.dir), "x")); err == nil {
		t.Error("../x was created")
	}
	if fi, err := os.Lstat(filepath.Join(f.dir, "out-link")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("out-link was replaced (%v)", err)
	}
}

func TestListFiles(t *testing.T) {
	f := newFixture(t)
	top := strings.Join([]string{"a.txt", "abs-link", "bin.dat", "empty.txt", "emptydir/", "in-dir", "in-link", "out-dir", "out-link", "partial.txt", "sub/"}, "\n")
	tests := []toolCase{
		{name: "workspace", args: `{}`, want: top},
		{name: "dot", args: `{"path":"."}`, want: top},
		{name: "subdirectory", args: `{"path":"sub"}`, want: "sub/a.txt\nsub/deep/"},
		{name: "trailing slash", args: `{"path":"sub/"}`, want: "sub/a.txt\nsub/deep/"},
		{name: "recursive", args: `{"path":"sub","recursive":true}`, want: "sub/a.txt\nsub/deep/\nsub/deep/b.txt"},
		{name: "recursive workspace does not follow links", args: `{"recursive":true}`,
			want: strings.Join([]string{"a.txt", "abs-link", "bin.dat", "empty.txt", "emptydir/", "in-dir", "in-link", "out-dir", "out-link", "partial.txt", "sub/", "sub/a.txt", "sub/deep/", "sub/deep/b.txt"}, "\n")},
		{name: "symlinked dir inside", args: `{"path":"in-dir","recursive":true}`, want: "in-dir/a.txt\nin-dir/deep/\nin-dir/deep/b.txt"},
		{name: "empty directory", args: `{"path":"emptydir"}`, want: "(empty directory)"},
		{name: "not a directory", args: `{"path":"a.txt"}`, wantErr: `path "a.txt" is not a directory; use read_file to read it`},
		{name: "missing", args: `{"path":"nope"}`, wantErr: `path "nope" does not exist`},
		{name: "schema/recursive not a boolean", args: `{"recursive":"yes"}`, wantErr: `arguments do not match the schema: /recursive: got string, want boolean`},
		{name: "schema/empty path", args: `{"path":""}`, wantErr: `arguments do not match the schema: /path: minLength: got 0, want 1`},
		{name: "schema/unknown property", args: `{"dir":"sub"}`, wantErr: `arguments do not match the schema: (root): additional properties 'dir' not allowed`},
		{name: "schema/not an object", args: `null`, wantErr: `arguments must be a JSON object, got null`},
	}
	f.run(t, "list_files", append(tests, escapeCases("list_files", "")...))
}

func TestListFilesCap(t *testing.T) {
	f := newFixture(t)
	big := filepath.Join(f.dir, "big")
	if err := os.Mkdir(big, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 1001 {
		if err := os.WriteFile(filepath.Join(big, fmt.Sprintf("f%04d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var lines []string
	for i := range 1000 {
		lines = append(lines, fmt.Sprintf("big/f%04d", i))
	}
	want := strings.Join(lines, "\n") + "\n[listing stopped at 1000 entries; list a subdirectory to see more]"
	f.run(t, "list_files", []toolCase{
		{name: "flat", args: `{"path":"big"}`, want: want},
		{name: "recursive", args: `{"path":"big","recursive":true}`, want: want},
	})
}

func TestOpenWorkspace(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		dir     string
		opts    []tool.WorkspaceOption
		wantErr string
	}{
		{name: "ok", dir: dir},
		{name: "missing", dir: filepath.Join(dir, "nope"), wantErr: "open workspace: stat " + filepath.Join(dir, "nope") + ": no such file or directory"},
		{name: "a file", dir: file, wantErr: fmt.Sprintf("open workspace: %q is not a directory", file)},
		{name: "zero timeout", dir: dir, opts: []tool.WorkspaceOption{tool.WithCommandTimeout(0)}, wantErr: "open workspace: command timeout must be positive, got 0s"},
		{name: "zero output", dir: dir, opts: []tool.WorkspaceOption{tool.WithMaxOutput(0)}, wantErr: "open workspace: max output must be positive, got 0"},
		{name: "bad env", dir: dir, opts: []tool.WorkspaceOption{tool.WithEnv([]string{"NOEQUALS"})}, wantErr: `open workspace: environment entry "NOEQUALS" is not KEY=value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, err := tool.OpenWorkspace(tt.dir, tt.opts...)
			if got := errText(err); got != tt.wantErr {
				t.Fatalf("OpenWorkspace error:\n got %s\nwant %s", got, tt.wantErr)
			}
			if err != nil {
				return
			}
			defer ws.Close()
			if ws.Dir() != dir {
				t.Errorf("Dir() = %q, want %q", ws.Dir(), dir)
			}
		})
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("OpenWorkspace created files: %d entries", len(entries))
	}
}

func TestWorkspaceTools(t *testing.T) {
	f := newFixture(t)
	want := map[string]pipeline.ToolCategory{
		"read_file": pipeline.CategoryRead, "write_file": pipeline.CategoryWrite,
		"list_files": pipeline.CategoryRead, "execute_command": pipeline.CategoryExecute,
	}
	r := tool.NewRegistry()
	for _, tl := range f.ws.Tools() {
		if err := r.Add(tl); err != nil { // validates the spec and compiles the schema
			t.Fatal(err)
		}
		if tl.Category != want[tl.Name] {
			t.Errorf("%s has category %q, want %q", tl.Name, tl.Category, want[tl.Name])
		}
		if tl.Description == "" {
			t.Errorf("%s has no description", tl.Name)
		}
		var schema struct {
			AdditionalProperties *bool `json:"additionalProperties"`
		}
		if err := json.Unmarshal(tl.Parameters, &schema); err != nil || schema.AdditionalProperties == nil || *schema.AdditionalProperties {
			t.Errorf("%s: schema does not set additionalProperties false (%v)", tl.Name, err)
		}
	}
	if got := strings.Join(r.Names(), ","); got != "read_file,write_file,list_files,execute_command" {
		t.Errorf("tools = %s", got)
	}
}

func TestWorkspaceClosed(t *testing.T) {
	f := newFixture(t)
	if err := f.ws.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.ws.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	for _, c := range []struct{ tool, args string }{
		{"read_file", `{"path":"a.txt"}`},
		{"write_file", `{"path":"a.txt","content":""}`},
		{"list_files", `{}`},
		{"execute_command", `{"command":"true"}`},
	} {
		res := f.call(t, c.tool, c.args)
		if !res.IsError || res.Content != "the workspace is closed" {
			t.Errorf("%s after Close = %q (IsError %v)", c.tool, res.Content, res.IsError)
		}
	}
}
