//go:build !wasip1

package ganglion

import (
	"errors"
	"strings"
	"testing"
)

// The fake's files: fileData maps a path to its content ("/" ends a
// directory's listing, JSON); fileWrites records "path mode data".
var (
	fileData   map[string]string
	fileWrites []string
)

func (f *fakeHost) fileRead(h int32, path string, b []byte) int32 {
	if c, ok := f.fail("file_read"); ok {
		return c
	}
	v, ok := fileData[path]
	if !ok {
		f.lastErr = "no file " + path
		return int32(CodeNotFound)
	}
	return give(b, []byte(v))
}

func (f *fakeHost) fileList(h int32, path string, b []byte) int32 {
	if c, ok := f.fail("file_list"); ok {
		return c
	}
	return give(b, []byte(fileData[path+"/"]))
}

func (f *fakeHost) fileWrite(h int32, path string, data []byte, mode int32) int32 {
	if c, ok := f.fail("file_write"); ok {
		return c
	}
	fileWrites = append(fileWrites, path+" "+string(rune('0'+mode))+" "+string(data))
	return 0
}

// TestFiles: a hook reads whole files (growing its buffer for a large
// one), lists directories and writes files through the file imports; the
// manifest carries the files, and only when there are some.
func TestFiles(t *testing.T) {
	f := newFake().use(t)
	big := strings.Repeat("b", 3*initialBuf)
	fileData = map[string]string{"CODEOWNERS": "* @team\n", "docs/big.md": big,
		"docs/": `[{"name":"a.md","dir":false,"size":6},{"name":"sub","dir":true,"size":0}]`}
	fileWrites = nil
	var got []string
	Register(Manifest{Name: "x", Files: Files{Read: []string{"CODEOWNERS", "docs/"}, Write: []string{"out/"}}}, func(api *API) error {
		api.Pipeline.Turn(func(c *Turn) error {
			b, err := c.ReadFile("CODEOWNERS")
			got = append(got, string(b), errString(err))
			b, err = c.ReadFile("docs/big.md")
			got = append(got, map[bool]string{true: "big"}[string(b) == big], errString(err))
			_, err = c.ReadFile("missing")
			got = append(got, "missing", errString(err))
			entries, err := c.ListFiles("docs")
			for _, e := range entries {
				got = append(got, e.Name, map[bool]string{true: "dir"}[e.Dir])
			}
			got = append(got, errString(err))
			got = append(got, errString(c.WriteFile("out/a.txt", []byte("new"))), errString(c.AppendFile("out/log", []byte("more"))))
			return c.Next()
		})
		return nil
	})
	if code := runInit(); code != 0 {
		t.Fatalf("runInit() = %d: %s", code, f.guestErr)
	}
	if want := `"files":{"read":["CODEOWNERS","docs/"],"write":["out/"]}`; !strings.Contains(f.gotManifest, want) {
		t.Errorf("manifest %s, want it to hold %s", f.gotManifest, want)
	}
	if code := runHook(kindTurn, 7, 1); code != 0 {
		t.Fatalf("runHook = %d: %s", code, f.guestErr)
	}
	want := []string{"* @team\n", "", "big", "", "missing", "ganglion: file_read: no file missing",
		"a.md", "", "sub", "dir", "", "", ""}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the hook saw\n%q\nwant\n%q", got, want)
	}
	if w := []string{"out/a.txt 0 new", "out/log 1 more"}; strings.Join(fileWrites, "|") != strings.Join(w, "|") {
		t.Errorf("writes %q, want %q", fileWrites, w)
	}

	f.codes["file_write"] = int32(CodeDenied)
	err := (&hook{h: 7}).WriteFile("docs/a.md", nil)
	if !errors.Is(err, ErrDenied) {
		t.Errorf("WriteFile refused: %v, want ErrDenied", err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestManifestWithoutFiles: a manifest without files says nothing of them,
// as a version 1 manifest does.
func TestManifestWithoutFiles(t *testing.T) {
	f := newFake().use(t)
	Register(Manifest{Name: "x"}, func(*API) error { return nil })
	if code := runInit(); code != 0 {
		t.Fatalf("runInit() = %d: %s", code, f.guestErr)
	}
	if strings.Contains(f.gotManifest, "files") {
		t.Errorf("manifest %s mentions files", f.gotManifest)
	}
}
