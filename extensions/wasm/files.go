package wasm

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/ganglion-dev/ganglion/events"
	"github.com/ganglion-dev/ganglion/extensions"
)

// Files.
//
// A guest reads and writes files of the agent's workspace through three
// imports (ABI version 2): file_read, file_list and file_write. Its
// manifest names the paths it needs ("files"), the agent's config grants
// them per extension (files: read:, write:), and the load fails when the
// config does not cover what the manifest asks. A call is then checked
// against the manifest:
//
//   - the path must be relative and stay in the workspace written as it is
//     (no "..", no absolute path), as the workspace tools require;
//   - it must be a path of the manifest's files or under one of them (a
//     write, under files.write; a read, under either list);
//   - a granted directory is opened as an [os.Root], so a symbolic link in
//     it is followed only if it stays in that directory, not merely in the
//     workspace; a file granted by name is read and written only as itself,
//     never through a symbolic link. The granted path itself is found as the
//     workspace tools find paths: through links that stay in the workspace.
//
// Whatever a guest asks, a refusal fails only its own call.

// Files are paths of the agent's workspace, relative to it, clean and
// without "..": a file ("CODEOWNERS"), a directory and all under it
// ("docs/", or "docs"), or "." for the whole workspace. Write paths may
// also be read.
type Files struct {
	// Read are the paths the extension may read.
	Read []string `json:"read"`
	// Write are the paths the extension may write, and read.
	Write []string `json:"write"`
}

func (f Files) empty() bool { return len(f.Read) == 0 && len(f.Write) == 0 }

// Per hook call (with the hooks nested in its next), a guest may read and
// list files, and write them, at most this much; beyond it the import
// answers TOO_LARGE. The deadline bounds the time reads take; the write
// bound also bounds what one call can put on the disk.
const (
	maxFileReads      = 1024     // file_read and file_list calls
	maxFileReadBytes  = 64 << 20 // bytes they return
	maxFileWrites     = 256      // file_write calls
	maxFileWriteBytes = 4 << 20  // bytes written
)

// fileQuota counts the file calls of one hook call (see quota).
type fileQuota struct {
	reads, readBytes   int
	writes, writeBytes int
}

// fileWriteMode is file_write's last argument.
const (
	fileReplace = 0
	fileAppend  = 1
)

// checkFilePath checks a path of the manifest's or the config's files:
// relative, clean, without "..". A trailing "/" says it is a directory.
func checkFilePath(p string) error {
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

// checkManifestFiles refuses a manifest whose files need a newer ABI or
// name paths that are not clean and relative.
func (in *instance) checkManifestFiles(m *Manifest) int32 {
	if m.Files.empty() {
		return 0
	}
	if m.ABI < 2 {
		return in.fail(codeInvalid, "manifest: files needs abi 2")
	}
	for _, l := range []struct {
		name  string
		paths []string
	}{{"read", m.Files.Read}, {"write", m.Files.Write}} {
		for _, p := range l.paths {
			if err := checkFilePath(p); err != nil {
				return in.fail(codeInvalid, "manifest: files.%s: %v", l.name, err)
			}
		}
	}
	return 0
}

// covers reports whether the path entry (of a manifest or a config)
// covers the clean path c: it is c, or a directory c is under.
func covers(entry, c string) bool {
	k := strings.TrimSuffix(entry, "/")
	return k == "." || c == k || strings.HasPrefix(c, k+"/")
}

// coveredBy returns the entries of asks that no entry of grants covers.
func coveredBy(asks, grants []string) []string {
	var missing []string
	for _, a := range asks {
		if !slices.ContainsFunc(grants, func(g string) bool { return covers(g, strings.TrimSuffix(a, "/")) }) {
			missing = append(missing, a)
		}
	}
	return missing
}

// checkFileGrants refuses a manifest that asks for files the config does
// not grant. A write grant grants reading too.
func (x *Extension) checkFileGrants() error {
	g := x.grants.Files
	if m := coveredBy(x.manifest.Files.Read, append(slices.Clone(g.Read), g.Write...)); len(m) > 0 {
		return fmt.Errorf("its manifest asks to read files the config does not grant: %s (add them under the extension's files: read:)", strings.Join(m, ", "))
	}
	if m := coveredBy(x.manifest.Files.Write, g.Write); len(m) > 0 {
		return fmt.Errorf("its manifest asks to write files the config does not grant: %s (add them under the extension's files: write:)", strings.Join(m, ", "))
	}
	return nil
}

// openWorkspace opens the agent's workspace for a guest that asks for
// files, at Register.
func (x *Extension) openWorkspace(api *extensions.API) error {
	if x.manifest.Files.empty() {
		return nil
	}
	if api.Workspace == "" {
		return errors.New("its manifest asks for files, but the agent has no workspace (set workspace: in the config)")
	}
	root, err := os.OpenRoot(api.Workspace)
	if err != nil {
		return fmt.Errorf("open the workspace for its files: %w", err)
	}
	x.workspace = root
	return nil
}

// fileAccess is a guest's path resolved against the manifest's files.
type fileAccess struct {
	root  *os.Root // the granted directory, or a granted file's directory
	name  string   // the path in root
	path  string   // as the guest wrote it, for messages
	grant string   // the entry of the manifest that covers it
	// byName: a file granted by name, which must not be a symbolic link.
	byName bool
}

func (a *fileAccess) close() { a.root.Close() }

// resolve checks the guest's path p for a read or a write, and opens the
// root the call works in; create makes a missing granted directory (or a
// granted file's directory). The caller closes the access.
func (in *instance) resolve(p string, write, create bool) (*fileAccess, int32) {
	ws := in.x.workspace
	if ws == nil {
		return nil, in.fail(codeFailed, "the extension has no workspace")
	}
	switch {
	case p == "":
		return nil, in.fail(codeInvalid, "the path is empty")
	case strings.HasPrefix(p, "/") || filepath.IsAbs(p):
		return nil, in.fail(codeDenied, "path %q is absolute; paths are relative to the workspace", p)
	case !filepath.IsLocal(p):
		return nil, in.fail(codeDenied, "path %q escapes the workspace", p)
	}
	c := path.Clean(filepath.ToSlash(p))
	m := in.x.manifest.Files
	entries, list := m.Write, "files.write"
	if !write {
		entries, list = append(slices.Clip(m.Read), m.Write...), "files.read or files.write"
	}
	i := slices.IndexFunc(entries, func(e string) bool { return covers(e, c) })
	if i < 0 {
		return nil, in.fail(codeDenied, "path %q: no path of the manifest's %s covers it", p, list)
	}
	a := &fileAccess{path: p, grant: entries[i]}
	k := strings.TrimSuffix(a.grant, "/")
	if c == k && k == a.grant {
		// Named as it was granted, and not as a directory: it is a
		// file, unless it is a directory in the workspace.
		fi, err := ws.Stat(k)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, in.pathFail(p, a.grant, err)
		}
		if err != nil || !fi.IsDir() {
			a.byName, a.name, k = true, path.Base(k), path.Dir(k)
		}
	}
	root, err := ws.OpenRoot(k)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err = ws.MkdirAll(k, 0o755); err == nil {
			root, err = ws.OpenRoot(k)
		}
	}
	if err != nil {
		if errors.Is(err, syscall.ENOTDIR) && !a.byName {
			return nil, in.fail(codeFailed, "path %q: its grant %q is not a directory", p, a.grant)
		}
		return nil, in.pathFail(p, a.grant, err)
	}
	a.root = root
	if !a.byName {
		switch {
		case c == k:
			a.name = "."
		case k == ".":
			a.name = c
		default:
			a.name = c[len(k)+1:]
		}
	}
	return a, 0
}

// pathFail turns an error of the workspace or of a grant's root into a
// failure code and a message that names the guest's path.
func (in *instance) pathFail(p, grant string, err error) int32 {
	switch {
	case isEscape(err):
		return in.fail(codeDenied, "path %q leads out of its grant %q", p, grant)
	case errors.Is(err, fs.ErrNotExist):
		return in.fail(codeNotFound, "path %q does not exist", p)
	case errors.Is(err, fs.ErrPermission):
		return in.fail(codeFailed, "path %q: permission denied", p)
	case errors.Is(err, syscall.ENOTDIR):
		return in.fail(codeFailed, "path %q: a parent is not a directory", p)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return in.fail(codeFailed, "path %q: %v", p, err)
}

// isEscape reports whether err is os.Root's refusal to leave the root. The
// os package does not export that error, so it is recognised by its text,
// as the workspace tools do; the tests pin it.
func isEscape(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if err.Error() == "path escapes from parent" {
			return true
		}
	}
	return false
}

// notLink refuses a file granted by name that is a symbolic link, and
// returns what Lstat found (nil if nothing is there).
func (in *instance) notLink(a *fileAccess) (fs.FileInfo, int32) {
	fi, err := a.root.Lstat(a.name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0
	}
	if err != nil {
		return nil, in.pathFail(a.path, a.grant, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, in.fail(codeDenied, "path %q is a symbolic link; a file granted by name is used only as itself", a.path)
	}
	return fi, 0
}

// openRead opens the file of a for reading: a regular file (not a FIFO
// that would block the call), and for a file granted by name, the one
// Lstat saw.
func (in *instance) openRead(a *fileAccess) (*os.File, fs.FileInfo, int32) {
	var seen fs.FileInfo
	if a.byName {
		var code int32
		if seen, code = in.notLink(a); code != 0 {
			return nil, nil, code
		}
	}
	f, err := a.root.OpenFile(a.name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, in.pathFail(a.path, a.grant, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, in.pathFail(a.path, a.grant, err)
	}
	if a.byName && (seen == nil || !os.SameFile(seen, fi)) {
		f.Close()
		return nil, nil, in.fail(codeDenied, "path %q changed while it was opened", a.path)
	}
	return f, fi, 0
}

// hostFileRead is file_read(ctx, path_ptr, path_len, buf_ptr, buf_len): a
// whole file, at most max_payload bytes.
func hostFileRead(in *instance, p []uint64) int32 {
	if _, code := in.hook(p[0]); code != 0 {
		return code
	}
	name, code := in.text(p[1], p[2], "file_read path")
	if code != 0 {
		return code
	}
	if _, ok := in.mem.Read(uint32(p[3]), uint32(p[4])); !ok {
		return in.fail(codeBounds, "buffer (%d, %d) is outside the guest's memory", uint32(p[3]), uint32(p[4]))
	}
	q := &in.spent.files
	if q.reads >= maxFileReads {
		return in.fail(codeTooLarge, "file_read: over the limit of %d reads per hook call", maxFileReads)
	}
	q.reads++
	a, code := in.resolve(name, false, false)
	if code != 0 {
		return code
	}
	defer a.close()
	f, fi, code := in.openRead(a)
	if code != 0 {
		return code
	}
	defer f.Close()
	switch {
	case fi.IsDir():
		return in.fail(codeFailed, "path %q is a directory (list it with file_list)", name)
	case !fi.Mode().IsRegular():
		return in.fail(codeFailed, "path %q is not a regular file", name)
	case fi.Size() > int64(in.x.limits.MaxPayload):
		return in.fail(codeTooLarge, "path %q is %d bytes, over max_payload %d", name, fi.Size(), in.x.limits.MaxPayload)
	case fi.Size() > int64(uint32(p[4])):
		// It does not fit: the guest asks again with a buffer this long.
		return int32(fi.Size())
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(in.x.limits.MaxPayload)+1))
	if err != nil {
		return in.pathFail(name, a.grant, err)
	}
	if len(b) > in.x.limits.MaxPayload {
		return in.fail(codeTooLarge, "path %q grew over max_payload %d while it was read", name, in.x.limits.MaxPayload)
	}
	if q.readBytes+len(b) > maxFileReadBytes {
		return in.fail(codeTooLarge, "file_read: over the limit of %d bytes per hook call", maxFileReadBytes)
	}
	q.readBytes += len(b)
	return in.give(p[3], p[4], b)
}

// fileEntry is one entry of file_list's answer.
type fileEntry struct {
	Name string `json:"name"`
	Dir  bool   `json:"dir"`
	Size int64  `json:"size"`
}

// hostFileList is file_list(ctx, path_ptr, path_len, buf_ptr, buf_len): a
// directory's entries, sorted by name, as JSON. A symbolic link is listed
// as what it leads to when that stays in the grant, else as a file of
// size 0 (reading it is then refused).
func hostFileList(in *instance, p []uint64) int32 {
	if _, code := in.hook(p[0]); code != 0 {
		return code
	}
	name, code := in.text(p[1], p[2], "file_list path")
	if code != 0 {
		return code
	}
	q := &in.spent.files
	if q.reads >= maxFileReads {
		return in.fail(codeTooLarge, "file_list: over the limit of %d reads per hook call", maxFileReads)
	}
	q.reads++
	a, code := in.resolve(name, false, false)
	if code != 0 {
		return code
	}
	defer a.close()
	if a.byName {
		return in.fail(codeFailed, "path %q is granted as a file, not a directory", name)
	}
	fi, err := a.root.Stat(a.name)
	if err != nil {
		return in.pathFail(name, a.grant, err)
	}
	if !fi.IsDir() {
		return in.fail(codeFailed, "path %q is not a directory (read it with file_read)", name)
	}
	des, err := fs.ReadDir(a.root.FS(), a.name)
	if err != nil {
		return in.pathFail(name, a.grant, err)
	}
	out := make([]fileEntry, 0, len(des))
	for _, de := range des {
		e := fileEntry{Name: de.Name(), Dir: de.IsDir()}
		info, err := de.Info()
		if err == nil && info.Mode()&fs.ModeSymlink != 0 {
			info, err = a.root.Stat(path.Join(a.name, de.Name()))
			if err == nil {
				e.Dir = info.IsDir()
			}
		}
		if err == nil && !e.Dir && info.Mode().IsRegular() {
			e.Size = info.Size()
		}
		out = append(out, e)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return in.fail(codeFailed, "file_list: %v", err)
	}
	if q.readBytes+len(b) > maxFileReadBytes {
		return in.fail(codeTooLarge, "file_list: over the limit of %d bytes per hook call", maxFileReadBytes)
	}
	q.readBytes += len(b)
	return in.give(p[3], p[4], b)
}

// hostFileWrite is file_write(ctx, path_ptr, path_len, data_ptr,
// data_len, mode): mode 0 replaces the file (readers see the old content
// or the new, never a mix), 1 appends to it; either creates it, and its
// missing directories inside the grant. Each write publishes
// extension.file.written, without the content.
func hostFileWrite(in *instance, p []uint64) int32 {
	f, code := in.hook(p[0])
	if code != 0 {
		return code
	}
	name, code := in.text(p[1], p[2], "file_write path")
	if code != 0 {
		return code
	}
	data, code := in.read(p[3], p[4], "file_write data")
	if code != 0 {
		return code
	}
	mode := int32(uint32(p[5]))
	if mode != fileReplace && mode != fileAppend {
		return in.fail(codeInvalid, "file_write: unknown mode %d (want 0 replace or 1 append)", mode)
	}
	q := &in.spent.files
	if code := in.spend("file_write", "writes", &q.writes, &q.writeBytes, len(data), maxFileWrites, maxFileWriteBytes); code != 0 {
		return code
	}
	a, code := in.resolve(name, true, true)
	if code != 0 {
		return code
	}
	defer a.close()
	if code := in.writeFile(a, data, mode == fileAppend); code != 0 {
		return code
	}
	if in.x.api != nil {
		in.x.api.Events.PublishTurn(events.ExtensionFileWritten, f.instanceKey(), f.turnID(),
			events.ExtensionFileWrittenData{Path: path.Clean(filepath.ToSlash(name)), Bytes: len(data), Append: mode == fileAppend})
	}
	return 0
}

// writeFile writes data to the file of a, as write_file does: through a
// symbolic link in a granted directory (the root refuses one that leads
// out of it), never through one granted by name.
func (in *instance) writeFile(a *fileAccess, data []byte, appending bool) int32 {
	perm := fs.FileMode(0o644)
	fi, err := a.root.Lstat(a.name)
	link := err == nil && fi.Mode()&fs.ModeSymlink != 0
	switch {
	case link && a.byName:
		return in.fail(codeDenied, "path %q is a symbolic link; a file granted by name is used only as itself", a.path)
	case link:
		if fi, err = a.root.Stat(a.name); err != nil {
			return in.pathFail(a.path, a.grant, err)
		}
	case errors.Is(err, fs.ErrNotExist):
		fi = nil
	case err != nil:
		return in.pathFail(a.path, a.grant, err)
	}
	if fi != nil {
		if fi.IsDir() {
			return in.fail(codeFailed, "path %q is a directory", a.path)
		}
		if !fi.Mode().IsRegular() {
			return in.fail(codeFailed, "path %q is not a regular file", a.path)
		}
		perm = fi.Mode().Perm()
	}
	if dir := path.Dir(a.name); fi == nil && dir != "." {
		if err := a.root.MkdirAll(dir, 0o755); err != nil {
			return in.pathFail(a.path, a.grant, err)
		}
	}
	if appending {
		w, err := a.root.OpenFile(a.name, os.O_WRONLY|os.O_CREATE|os.O_APPEND|syscall.O_NONBLOCK, perm)
		if err != nil {
			return in.pathFail(a.path, a.grant, err)
		}
		if a.byName {
			// What was opened must be the name itself, not a link put
			// there since Lstat.
			got, err1 := w.Stat()
			now, err2 := a.root.Lstat(a.name)
			if err1 != nil || err2 != nil || !os.SameFile(got, now) {
				w.Close()
				return in.fail(codeDenied, "path %q changed while it was opened", a.path)
			}
		}
		_, err = w.Write(data)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return in.pathFail(a.path, a.grant, err)
		}
		return 0
	}
	if link {
		if err := a.root.WriteFile(a.name, data, perm); err != nil {
			return in.pathFail(a.path, a.grant, err)
		}
		return 0
	}
	if err := replaceFile(a.root, a.name, data, perm); err != nil {
		return in.pathFail(a.path, a.grant, err)
	}
	return 0
}

// replaceFile writes data to a temporary file beside name and renames it
// over name, so that readers see the old content or the new, never a mix,
// and a symbolic link put at name meanwhile is replaced, not followed.
func replaceFile(root *os.Root, name string, data []byte, perm fs.FileMode) error {
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	tmp := path.Join(path.Dir(name), "."+path.Base(name)+".tmp-"+hex.EncodeToString(suffix[:]))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm) // the umask may have narrowed it
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		_ = root.Remove(tmp)
	}
	return err
}

// turnID is the ID of the turn the hook call belongs to, if any.
func (f *frame) turnID() string {
	switch {
	case f.turn != nil:
		return f.turn.TurnID()
	case f.step != nil:
		return f.step.TurnID()
	case f.call != nil:
		return f.call.TurnID()
	case f.ev != nil:
		return f.ev.TurnID
	}
	return ""
}
