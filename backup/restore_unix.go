//go:build unix

package backup

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// chownTree gives everything under dir the owner and group of like, when
// they differ from the restoring process's (root restoring into a
// service's directory). The same owner is a no-op.
func chownTree(dir string, like os.FileInfo) error {
	st, ok := like.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) == os.Geteuid() && int(st.Gid) == os.Getegid() {
		return nil
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(st.Uid), int(st.Gid))
	})
}

// freeSpace is the bytes an unprivileged process may still write on the
// file system of dir; tests replace it.
var freeSpace = func(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}
