// Command gofiles is a Go guest that reads, lists and writes workspace
// files through the SDK, for the tests of the file imports
// (files_test.go). Its turn hook answers the turn itself:
//
//   - "owners": with the content of CODEOWNERS;
//   - "docs": with the names in docs/, a "/" after a directory's;
//   - "note TEXT": appends TEXT and a newline to out/notes.txt, and
//     answers with the file's new content;
//   - "steal": reads ../outside/secret.txt, and answers with the error;
//   - "flood": appends a byte to out/flood.txt until the host refuses,
//     and "bigwrite" writes 512 KiB files into out/ until it refuses:
//     answers how many writes worked, and the refusal.
//
// Any other input goes on to next.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o gofiles.wasm .
package main

import (
	"fmt"
	"strings"

	ganglion "github.com/ganglion-dev/ganglion/sdk"
)

func init() {
	ganglion.Register(ganglion.Manifest{Name: "gofiles", Version: "1.0.0",
		Files: ganglion.Files{Read: []string{"CODEOWNERS", "docs/"}, Write: []string{"out/"}}}, func(api *ganglion.API) error {
		api.Pipeline.Turn(turn)
		return nil
	})
}

func turn(t *ganglion.Turn) error {
	in := t.InputText()
	var answer string
	switch {
	case in == "owners":
		b, err := t.ReadFile("CODEOWNERS")
		if err != nil {
			return err
		}
		answer = string(b)
	case in == "docs":
		entries, err := t.ListFiles("docs")
		if err != nil {
			return err
		}
		var names []string
		for _, e := range entries {
			if e.Dir {
				e.Name += "/"
			}
			names = append(names, e.Name)
		}
		answer = strings.Join(names, " ")
	case strings.HasPrefix(in, "note "):
		if err := t.AppendFile("out/notes.txt", []byte(strings.TrimPrefix(in, "note ")+"\n")); err != nil {
			return err
		}
		b, err := t.ReadFile("out/notes.txt")
		if err != nil {
			return err
		}
		answer = string(b)
	case in == "steal":
		_, err := t.ReadFile("../outside/secret.txt")
		answer = "refused: " + err.Error()
	case in == "flood" || in == "bigwrite":
		var err error
		n := 0
		for ; err == nil && n < 10000; n++ {
			if in == "flood" {
				err = t.AppendFile("out/flood.txt", []byte("x"))
			} else {
				err = t.WriteFile(fmt.Sprintf("out/big-%d", n), make([]byte, 512<<10))
			}
		}
		answer = fmt.Sprintf("%d writes, then %v", n-1, err)
	default:
		return t.Next()
	}
	return t.SetResult(ganglion.TurnResult{Response: ganglion.Message{Content: answer}})
}

func main() {}
