package tool

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ganglion-dev/ganglion/pipeline"
)

// maxListEntries caps what list_files returns.
const maxListEntries = 1000

// binarySniffLen is how much of a file read_file inspects for NUL bytes,
// as git and grep do, to tell binary files from text.
const binarySniffLen = 8000

type readFileArgs struct {
	Path   string  `json:"path"`
	Offset float64 `json:"offset"`
	Limit  float64 `json:"limit"`
}

func (w *Workspace) readFileTool() pipeline.Tool {
	return newTool(w, pipeline.ToolSpec{
		Name: "read_file",
		Description: fmt.Sprintf("Read a text file in the workspace. Returns its text, or the lines from offset on, "+
			"at most limit of them. Output beyond %d bytes is cut, and the result says where to read on.", w.cfg.maxOutput),
		Parameters: []byte(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "Path of the file, relative to the workspace."},
    "offset": {"type": "integer", "minimum": 1, "description": "First line to return, counting from 1. Default 1."},
    "limit": {"type": "integer", "minimum": 1, "description": "Most lines to return. Default: to the end of the file."}
  },
  "required": ["path"],
  "additionalProperties": false
}`),
		Category: pipeline.CategoryRead,
	}, w.readFile)
}

func (w *Workspace) readFile(_ context.Context, a readFileArgs) (string, error) {
	if err := checkPath(a.Path); err != nil {
		return "", err
	}
	fi, err := w.root.Stat(a.Path)
	if err != nil {
		return "", w.pathError(a.Path, err)
	}
	if fi.IsDir() {
		return "", fmt.Errorf("path %q is a directory; use list_files to see what it holds", a.Path)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("path %q is not a regular file", a.Path)
	}
	f, err := w.root.Open(a.Path)
	if err != nil {
		return "", w.pathError(a.Path, err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 32<<10)
	head, err := br.Peek(binarySniffLen)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return "", w.pathError(a.Path, err)
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return "", fmt.Errorf("path %q is a binary file; read_file reads text only", a.Path)
	}
	offset, limit := max(toInt(a.Offset), 1), toInt(a.Limit)
	text, err := readLines(br, offset, limit, w.cfg.maxOutput)
	if errors.Is(err, errPastEnd) {
		return "", fmt.Errorf("path %q: %w", a.Path, err)
	}
	if err != nil {
		return "", w.pathError(a.Path, err)
	}
	return text, nil
}

// toInt converts a JSON integer the schema has checked, saturating.
func toInt(f float64) int {
	if f >= math.MaxInt32 {
		return math.MaxInt32
	}
	return int(f)
}

// errPastEnd says that the file has fewer lines than the offset asked for.
var errPastEnd = errors.New("past the end of the file")

// readLines returns lines offset, offset+1, ... of r (counting from 1), at
// most limit of them (0: no limit) and at most max bytes. It keeps whole
// lines when it cuts, unless the first line alone is too long.
func readLines(r *bufio.Reader, offset, limit, max int) (string, error) {
	var out []byte
	line := 1    // the line being read
	shown := 0   // lines fully in out
	lineEnd := 0 // len(out) after the last full line
	partial := false
	for {
		frag, err := r.ReadSlice('\n')
		if len(frag) > 0 && line >= offset {
			out = append(out, frag...)
			if len(out) > max {
				if shown > 0 {
					return fmt.Sprintf("%s[truncated: showing lines %d-%d; output is limited to %d bytes; read on with offset %d]",
						out[:lineEnd], offset, line-1, max, line), nil
				}
				return fmt.Sprintf("%s\n[truncated: line %d is longer than the output limit of %d bytes]",
					cutUTF8(out, max), line, max), nil
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			partial = true
			continue
		}
		if len(frag) > 0 && frag[len(frag)-1] == '\n' {
			if line >= offset {
				shown++
				lineEnd = len(out)
			}
			line++
			partial = false
			if limit > 0 && shown == limit {
				return string(out), nil
			}
			continue
		}
		partial = partial || len(frag) > 0
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
	}
	lines := line - 1
	if partial {
		lines++
	}
	if offset > 1 && offset > lines {
		return "", fmt.Errorf("offset %d is %w (%d lines)", offset, errPastEnd, lines)
	}
	return string(out), nil
}

// cutUTF8 cuts b to at most n bytes without splitting a character.
func cutUTF8(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	b = b[:n]
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				b = b[:i]
			}
			break
		}
	}
	return b
}

type writeFileArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

func (w *Workspace) writeFileTool() pipeline.Tool {
	return newTool(w, pipeline.ToolSpec{
		Name:        "write_file",
		Description: "Create or replace a file in the workspace with the given content. Missing parent directories are created.",
		Parameters: []byte(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "Path of the file, relative to the workspace."},
    "content": {"type": "string", "description": "The whole new content of the file."}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`),
		Category: pipeline.CategoryWrite,
	}, w.writeFile)
}

func (w *Workspace) writeFile(_ context.Context, a writeFileArgs) (string, error) {
	if err := checkPath(a.Path); err != nil {
		return "", err
	}
	name := filepath.Clean(a.Path)
	data := []byte(a.Content)
	done := fmt.Sprintf("wrote %d bytes to %q", len(data), a.Path)
	perm := fs.FileMode(0o644)
	fi, err := w.root.Lstat(name)
	switch {
	case err == nil && fi.Mode()&fs.ModeSymlink != 0:
		// Write through the link; os.Root refuses it if it leads outside.
		if err := w.root.WriteFile(name, data, perm); err != nil {
			return "", w.pathError(a.Path, err)
		}
		return done, nil
	case err == nil && fi.IsDir():
		return "", fmt.Errorf("path %q is a directory", a.Path)
	case err == nil && !fi.Mode().IsRegular():
		return "", fmt.Errorf("path %q is not a regular file", a.Path)
	case err == nil:
		perm = fi.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return "", w.pathError(a.Path, err)
	}
	if dir := filepath.Dir(name); dir != "." {
		if err := w.root.MkdirAll(dir, 0o755); err != nil {
			return "", w.pathError(a.Path, err)
		}
	}
	if err := w.replaceFile(name, data, perm); err != nil {
		return "", w.pathError(a.Path, err)
	}
	return done, nil
}

// replaceFile writes data to a temporary file beside name and renames it
// over name, so that readers see the old content or the new, never a mix.
// Where that is not possible it writes name in place.
func (w *Workspace) replaceFile(name string, data []byte, perm fs.FileMode) error {
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	tmp := filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+".tmp-"+hex.EncodeToString(suffix[:]))
	f, err := w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return w.root.WriteFile(name, data, perm)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm) // the umask may have narrowed it
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = w.root.Rename(tmp, name)
	}
	if err != nil {
		_ = w.root.Remove(tmp)
		return w.root.WriteFile(name, data, perm)
	}
	return nil
}

type listFilesArgs struct {
	Path      string `json:"path"`
	Recursive bool   `json:"recursive"`
}

func (w *Workspace) listFilesTool() pipeline.Tool {
	return newTool(w, pipeline.ToolSpec{
		Name: "list_files",
		Description: fmt.Sprintf("List a directory of the workspace. Entries are paths relative to the workspace, "+
			"sorted, directories ending in '/'. A recursive listing does not follow symbolic links. At most %d entries.", maxListEntries),
		Parameters: []byte(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "Directory to list, relative to the workspace. Default \".\", the workspace itself."},
    "recursive": {"type": "boolean", "description": "List subdirectories too. Default false."}
  },
  "additionalProperties": false
}`),
		Category: pipeline.CategoryRead,
	}, w.listFiles)
}

func (w *Workspace) listFiles(ctx context.Context, a listFilesArgs) (string, error) {
	p := a.Path
	if p == "" {
		p = "."
	}
	if err := checkPath(p); err != nil {
		return "", err
	}
	name := path.Clean(filepath.ToSlash(p))
	fi, err := w.root.Stat(name)
	if err != nil {
		return "", w.pathError(p, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("path %q is not a directory; use read_file to read it", p)
	}
	prefix := ""
	if name != "." {
		prefix = name + "/"
	}
	var entries []string
	truncated := false
	if !a.Recursive {
		des, err := fs.ReadDir(w.root.FS(), name)
		if err != nil {
			return "", w.pathError(p, err)
		}
		slices.SortFunc(des, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		if len(des) > maxListEntries {
			des, truncated = des[:maxListEntries], true
		}
		for _, de := range des {
			entries = append(entries, entry(prefix+de.Name(), de))
		}
	} else {
		err := fs.WalkDir(w.root.FS(), name, func(p string, de fs.DirEntry, err error) error {
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			if p == name {
				return err
			}
			if err != nil {
				return nil // an unreadable subdirectory: list what can be read
			}
			if len(entries) == maxListEntries {
				truncated = true
				return fs.SkipAll
			}
			entries = append(entries, entry(p, de))
			return nil
		})
		if err != nil {
			return "", w.pathError(p, err)
		}
	}
	if len(entries) == 0 {
		return "(empty directory)", nil
	}
	text := strings.Join(entries, "\n")
	if truncated {
		text += fmt.Sprintf("\n[listing stopped at %d entries; list a subdirectory to see more]", maxListEntries)
	}
	return text, nil
}

func entry(p string, de fs.DirEntry) string {
	if de.IsDir() {
		return p + "/"
	}
	return p
}
