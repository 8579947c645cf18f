package volumes

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// file is one file of a projected volume (configMap, secret, downwardAPI,
// projected).
type file struct {
	data []byte
	mode fs.FileMode
}

const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"
	tsDirPrefix    = "..ts_"
)

// validatePath checks a path of a projected file: relative, clean enough,
// without .. elements and not starting with "..", as the API validates it.
func validatePath(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case filepath.IsAbs(p):
		return fmt.Errorf("path %q is absolute", p)
	case strings.HasPrefix(p, ".."):
		return fmt.Errorf("path %q starts with '..'", p)
	case filepath.Clean(p) != p:
		return fmt.Errorf("path %q is not clean", p)
	}
	for _, e := range strings.Split(p, "/") {
		if e == ".." {
			return fmt.Errorf("path %q contains '..'", p)
		}
	}
	return nil
}

// writeAtomic makes dir hold exactly files, the way upstream's
// AtomicWriter does, so that a container never sees a half-updated
// volume: the files go to a fresh hidden timestamped directory, the
// ..data symlink is swapped to it with a rename, each top-level entry is a
// symlink through ..data, and the previous directory is removed. Nothing
// is written when the content and modes are already as asked.
func writeAtomic(dir string, files map[string]file) error {
	for p := range files {
		if err := validatePath(p); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	dataLink := filepath.Join(dir, dataDirName)
	oldTS, err := os.Readlink(dataLink)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", dataLink, err)
	}
	if oldTS != "" && sameContent(filepath.Join(dir, oldTS), files) && topLevelOK(dir, files) {
		return nil
	}

	tsDir, err := os.MkdirTemp(dir, tsDirPrefix)
	if err != nil {
		return err
	}
	if err := fillAndSwap(dir, tsDir, files); err != nil {
		os.RemoveAll(tsDir)
		return err
	}

	want := map[string]bool{}
	for p := range files {
		want[strings.SplitN(p, "/", 2)[0]] = true
	}
	for top := range want {
		link := filepath.Join(dir, top)
		target := filepath.Join(dataDirName, top)
		if cur, err := os.Readlink(link); err == nil && cur == target {
			continue
		}
		if err := os.RemoveAll(link); err != nil {
			return err
		}
		if err := os.Symlink(target, link); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		switch {
		case name == dataDirName || name == filepath.Base(tsDir):
		case strings.HasPrefix(name, tsDirPrefix), !strings.HasPrefix(name, "..") && !want[name]:
			if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
				return err
			}
		}
	}
	return nil
}

// fillAndSwap writes files into tsDir and points ..data at it.
func fillAndSwap(dir, tsDir string, files map[string]file) error {
	if err := os.Chmod(tsDir, 0o755); err != nil {
		return err
	}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		f := files[p]
		full := filepath.Join(tsDir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, f.data, f.mode); err != nil {
			return err
		}
		if err := os.Chmod(full, f.mode); err != nil { // past the umask
			return err
		}
	}
	tmpLink := filepath.Join(dir, newDataDirName)
	if err := os.Remove(tmpLink); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Symlink(filepath.Base(tsDir), tmpLink); err != nil {
		return err
	}
	if err := os.Rename(tmpLink, filepath.Join(dir, dataDirName)); err != nil {
		return fmt.Errorf("swapping %s: %w", dataDirName, err)
	}
	return nil
}

// sameContent reports whether tsDir holds exactly files, with their modes.
func sameContent(tsDir string, files map[string]file) bool {
	seen := 0
	err := filepath.WalkDir(tsDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(tsDir, path)
		f, ok := files[rel]
		if !ok {
			return errors.New("extra file")
		}
		info, err := d.Info()
		if err != nil || info.Mode().Perm() != f.mode.Perm() || !d.Type().IsRegular() {
			return errors.New("mode differs")
		}
		b, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(b, f.data) {
			return errors.New("content differs")
		}
		seen++
		return nil
	})
	return err == nil && seen == len(files)
}

// topLevelOK reports whether every top-level entry of files is a symlink
// through ..data.
func topLevelOK(dir string, files map[string]file) bool {
	for p := range files {
		top := strings.SplitN(p, "/", 2)[0]
		if cur, err := os.Readlink(filepath.Join(dir, top)); err != nil || cur != filepath.Join(dataDirName, top) {
			return false
		}
	}
	return true
}
