package secrettest

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// CheckFiles reports an error for every file under dir that holds one of
// the [Forms] of values, byte for byte, and returns how many files it read.
func CheckFiles(tb testing.TB, dir string, values []string) int {
	tb.Helper()
	var forms []string
	for _, v := range values {
		forms = append(forms, Forms(v)...)
	}
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for _, f := range forms {
			if bytes.Contains(b, []byte(f)) {
				tb.Errorf("%s holds a secret (as %q)", path, f)
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("read the files under %s: %v", dir, err)
	}
	return files
}

// EachStored calls fn with every version of every entry of the badger data
// directory dir, opened read-only. Badger compresses its tables, so a
// stored value need not show in the files' bytes: a canary test reads the
// entries too.
func EachStored(tb testing.TB, dir string, fn func(key, value []byte)) {
	tb.Helper()
	db, err := badger.Open(badger.DefaultOptions(dir).WithReadOnly(true).WithLogger(nil))
	if err != nil {
		tb.Fatalf("open the data directory: %v", err)
	}
	defer db.Close()
	err = db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.AllVersions = true
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			v, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			fn(item.KeyCopy(nil), v)
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("read the data directory: %v", err)
	}
}

// CheckStored runs [Check] on every version of every entry of the badger
// data directory dir, and returns how many it checked.
func CheckStored(tb testing.TB, dir string, values []string) int {
	tb.Helper()
	entries := 0
	EachStored(tb, dir, func(k, v []byte) {
		entries++
		Check(tb, "the stored entry "+string(k), string(k)+"\n"+string(v), values)
	})
	return entries
}
