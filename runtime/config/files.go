package config

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// extensionFiles checks an extension's files: grants: only for a WASM
// extension, each path relative to the workspace and clean.
func (v *validator) extensionFiles(e *Extension, path, epre string) {
	if len(e.Files.Read)+len(e.Files.Write) == 0 {
		return
	}
	if e.Wasm == "" {
		v.errorf(path+".files", "%sfiles: only a WebAssembly extension (wasm:) is granted files; a native one has the workspace's directory (API.Workspace)", epre)
		return
	}
	for _, l := range []struct {
		key   string
		paths []string
	}{{"read", e.Files.Read}, {"write", e.Files.Write}} {
		for k, p := range l.paths {
			if err := checkWorkspacePath(p); err != nil {
				v.errorf(path+".files."+l.key+"["+strconv.Itoa(k)+"]", "%sfiles: %s: %v", epre, l.key, err)
			}
		}
	}
}

// checkWorkspacePath checks a path granted in the workspace: relative,
// clean, without "..". A trailing "/" says it is a directory. The
// WebAssembly host checks a manifest's paths by the same rule.
func checkWorkspacePath(p string) error {
	q := strings.TrimSuffix(p, "/")
	switch {
	case p == "":
		return errors.New("a path is empty")
	case strings.HasPrefix(p, "/") || filepath.IsAbs(p):
		return fmt.Errorf("%q is absolute; paths are relative to the workspace", p)
	case slices.Contains(strings.Split(q, "/"), ".."):
		return fmt.Errorf("%q climbs out with \"..\"; paths are relative to the workspace, inside it", p)
	case strings.Contains(p, `\`):
		return fmt.Errorf("%q holds a backslash; separate directories with /", p)
	case !fs.ValidPath(q):
		return fmt.Errorf("%q is not a clean path (no empty, \".\" or \"..\" part; \".\" alone is the workspace)", p)
	}
	return nil
}
