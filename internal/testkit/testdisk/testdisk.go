// Package testdisk gives tests a data directory whose writes they can make
// fail and then succeed again, with the real file system doing the
// failing. It is imported only by tests.
//
// As root it is a 1 MiB tmpfs that Fail fills to the brim (writes fail
// with ENOSPC: Full is true); tmpfs hands out whole pages, so a write that
// fits in the unused end of a file's last page may still succeed — write
// more than a page (4 KiB) to be sure of a failure. Otherwise, or when the
// mount fails, it is a plain directory that Fail makes read-only with
// everything in it (writes fail with EACCES: Full is false); descriptors
// opened for writing before Fail keep working, so call Fail before the
// code under test opens what it writes to (the chat log opens its file
// for appending at the first append).
package testdisk

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Disk is the directory Dir and the switch for its faults. Its methods are
// for the test's goroutine.
type Disk struct {
	// Dir is the directory; it is empty at first.
	Dir string
	// Full says how writes fail after Fail: ENOSPC (true) or EACCES.
	Full bool

	t       testing.TB
	ballast string
}

// New returns a Disk that is cleaned up (unmounted) when the test ends.
// Call it before starting what writes there, so that the test's cleanup
// stops that first.
func New(t testing.TB) *Disk {
	t.Helper()
	dir := t.TempDir()
	d := &Disk{Dir: dir, t: t}
	if os.Geteuid() == 0 {
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", dir).CombinedOutput(); err == nil {
			d.Full = true
			d.ballast = filepath.Join(dir, ".ballast")
			t.Cleanup(func() {
				// Lazily if something still holds a file open there (a
				// test that failed before stopping what it ran): the
				// mount must not outlive the test either way.
				if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
					if out2, err2 := exec.Command("umount", "-l", dir).CombinedOutput(); err2 != nil {
						t.Errorf("umount %s: %v: %s; %v: %s", dir, err, out, err2, out2)
					}
				}
			})
		} else {
			t.Logf("no tmpfs (%v: %s); a read-only directory stands in for a full disk", err, out)
		}
	}
	if !d.Full {
		t.Cleanup(d.Heal) // so that TempDir can remove it
	}
	return d
}

// Fail makes writes under Dir fail: it fills the tmpfs, or makes Dir and
// everything in it read-only.
func (d *Disk) Fail() {
	d.t.Helper()
	if !d.Full {
		if os.Geteuid() == 0 {
			d.t.Skip("running as root without a tmpfs: permissions cannot make writes fail")
		}
		d.chmod(0o500, 0o400)
		return
	}
	f, err := os.OpenFile(d.ballast, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		d.t.Fatalf("fill %s: %v", d.Dir, err)
	}
	defer f.Close()
	// Whole pages first, then byte by byte into the last one.
	for _, chunk := range [][]byte{make([]byte, 64<<10), make([]byte, 4096), {0}} {
		for {
			if _, err := f.Write(chunk); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					d.t.Fatalf("fill %s: %v", d.Dir, err)
				}
				break
			}
		}
	}
}

// Heal undoes Fail: it frees the space or restores the permissions
// (directories 0700, files 0600).
func (d *Disk) Heal() {
	d.t.Helper()
	if d.Full {
		if err := os.Remove(d.ballast); err != nil && !errors.Is(err, fs.ErrNotExist) {
			d.t.Fatalf("free %s: %v", d.Dir, err)
		}
		return
	}
	d.chmod(0o700, 0o600)
}

func (d *Disk) chmod(dirMode, fileMode fs.FileMode) {
	// A directory is changed before WalkDir reads it, and both modes
	// leave it readable.
	err := filepath.WalkDir(d.Dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			return os.Chmod(path, dirMode)
		}
		return os.Chmod(path, fileMode)
	})
	if err != nil {
		d.t.Fatalf("chmod %s: %v", d.Dir, err)
	}
}
