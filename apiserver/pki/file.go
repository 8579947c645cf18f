package pki

import (
	"fmt"
	"os"
	"path/filepath"
)

// File modes of what this package writes.
const (
	keyMode  os.FileMode = 0o600
	certMode os.FileMode = 0o644
	dirMode  os.FileMode = 0o700
)

// WriteFileAtomic writes data to path with mode perm by writing a temporary
// file in the same directory and renaming it over path, so a reader sees
// either the old content or the new, never a partial file.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("creating temporary file for %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	// CreateTemp makes the file 0600; set the final mode before any data
	// is written so a key is never readable by others, even briefly.
	if err = f.Chmod(perm); err != nil {
		return fmt.Errorf("setting mode of %s: %w", tmp, err)
	}
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", tmp, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("closing %s: %w", tmp, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("renaming %s to %s: %w", tmp, path, err)
	}
	// Persist the rename. Some file systems refuse to sync a directory;
	// the file itself is already durable, so that is not an error.
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
