package ganglion

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Files are paths of the agent's workspace, relative to it: a file
// ("CODEOWNERS"), a directory and all under it ("docs/"), or "." for the
// whole workspace. A path is clean: no empty, "." or ".." part.
type Files struct {
	// Read are the paths the extension reads ([Context] ReadFile,
	// ListFiles).
	Read []string
	// Write are the paths the extension writes (WriteFile, AppendFile),
	// and reads.
	Write []string
}

// FileEntry is one entry of a directory ListFiles lists.
type FileEntry struct {
	// Name is the entry's name in the directory.
	Name string `json:"name"`
	// Dir: it is a directory (or a symbolic link to one in the grant).
	Dir bool `json:"dir"`
	// Size is a file's size in bytes; 0 for a directory.
	Size int64 `json:"size"`
}

// filesJSON is the manifest's files.
type filesJSON struct {
	Read  []string `json:"read"`
	Write []string `json:"write"`
}

// ReadFile returns the content of the file at path, relative to the
// agent's workspace, at most the extension's max_payload (1 MiB by
// default). The path must be one of the manifest's Files or under one.
// A missing file is [ErrNotFound]; a path outside the manifest's files,
// or that leaves them ("..", an absolute path, a symbolic link that leads
// out), is [ErrDenied].
func (c *hook) ReadFile(path string) ([]byte, error) {
	b, err := read("file_read", func(b []byte) int32 { return host.fileRead(c.h, path, b) })
	if err != nil {
		return nil, err
	}
	return bytes.Clone(b), nil
}

// ListFiles returns the entries of the directory at path, sorted by name.
// The path must be one of the manifest's Files or under one.
func (c *hook) ListFiles(path string) ([]FileEntry, error) {
	b, err := read("file_list", func(b []byte) int32 { return host.fileList(c.h, path, b) })
	if err != nil {
		return nil, err
	}
	var entries []FileEntry
	if err := json.Unmarshal(b, &entries); err != nil {
		return nil, fmt.Errorf("ganglion: file_list: %w", err)
	}
	return entries, nil
}

// WriteFile replaces the file at path with data (readers see the old
// content or the new, never a mix), creating it and its missing
// directories. The path must be one of the manifest's Files.Write or
// under one.
func (c *hook) WriteFile(path string, data []byte) error {
	if code := host.fileWrite(c.h, path, data, fileReplace); code < 0 {
		return hostError("file_write", code)
	}
	return nil
}

// AppendFile adds data at the end of the file at path, creating it and
// its missing directories, as WriteFile does.
func (c *hook) AppendFile(path string, data []byte) error {
	if code := host.fileWrite(c.h, path, data, fileAppend); code < 0 {
		return hostError("file_write", code)
	}
	return nil
}

// file_write's modes.
const (
	fileReplace = 0
	fileAppend  = 1
)
