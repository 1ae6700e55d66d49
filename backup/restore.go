package backup

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/frontdesk-hq/frontdesk/internal/atomicfile"
)

// Restore extracts the archive into a temporary directory, fsyncs it, and
// only then moves it into place: a restore that fails before that leaves
// the data directory as it was (absent or empty) and removes what it
// wrote.
//
// An absent data directory is created by renaming the temporary one,
// made beside it, into place: all or nothing. An existing empty one is
// kept — it may be a mount point (a container volume) that cannot be
// replaced, or a directory whose owner and mode matter (systemd's
// StateDirectory=) — so the archive is extracted into a hidden directory
// inside it, the files are given the directory's owner, and the entries
// are renamed up one level at the end: a crash during those few renames
// leaves a partial restore, which the next restore refuses as not empty.
//
// Before any of that the whole archive is read once without writing
// (vet): an archive with an entry larger than lim allows, with no file
// at all, or larger than the free space of the target's file system is
// refused with nothing written.
func Restore(archivePath string, l Layout, lim Limits) (files int, err error) {
	target := l.DataDir
	// A data directory reached through a symbolic link (systemd's
	// DynamicUser= makes /var/lib/NAME one) is restored where it leads.
	if st, err := os.Lstat(target); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		real, err := filepath.EvalSymlinks(target)
		if err != nil {
			return 0, fmt.Errorf("the data directory %s is a symbolic link that leads nowhere (%v); restore into the directory it should name", target, err)
		}
		target = real
	}
	if err := checkEmpty(target); err != nil {
		return 0, err
	}
	if err := vet(archivePath, target, l, lim); err != nil {
		return 0, err
	}
	targetInfo, err := os.Stat(target)
	exists := err == nil
	var tmp string
	if exists {
		tmp, err = os.MkdirTemp(target, ".restore-*")
	} else {
		if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
			return 0, err
		}
		tmp, err = os.MkdirTemp(filepath.Dir(target), "."+filepath.Base(target)+".restore-*")
	}
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	if files, err = extract(archivePath, tmp, l, lim); err != nil {
		return 0, err
	}
	if exists {
		if err := chownTree(tmp, targetInfo); err != nil {
			return 0, fmt.Errorf("give the restored files to the owner of %s: %w (restore as that user, or as root)", target, err)
		}
	}
	if err := syncTree(tmp); err != nil {
		return 0, err
	}
	if !exists {
		if err := os.Rename(tmp, target); err != nil {
			return 0, fmt.Errorf("move the restored data into %s: %w", target, err)
		}
		return files, atomicfile.SyncDir(filepath.Dir(target))
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return 0, err
	}
	for _, e := range entries {
		if err := os.Rename(filepath.Join(tmp, e.Name()), filepath.Join(target, e.Name())); err != nil {
			return 0, fmt.Errorf("move the restored data into %s: %w", target, err)
		}
	}
	if err := os.Remove(tmp); err != nil {
		return 0, err
	}
	return files, atomicfile.SyncDir(target)
}

// vet reads the archive through without writing: every check extract
// makes, then an archive that restores no file (only its manifest) and one
// larger than the free space where target is (or would be) are refused.
func vet(archivePath, target string, l Layout, lim Limits) error {
	c, err := scan(archivePath, l, lim)
	if err != nil {
		return err
	}
	if c.files == 0 {
		return fmt.Errorf("%s holds no files, only its manifest: restoring it would leave %s empty, "+
			"which is surely not what was meant; refusing (check that this is the archive you want)", archivePath, target)
	}
	dir := target
	for {
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			break
		}
		dir = filepath.Dir(dir)
	}
	free, err := freeSpace(dir)
	if err != nil {
		return fmt.Errorf("cannot tell the free space at %s: %w", dir, err)
	}
	if need := uint64(c.bytes) + freeMargin; need > free {
		return fmt.Errorf("not enough space: %s restores %d files of %s, and the file system of %s has %s free "+
			"(with %s to spare); free some space or restore elsewhere with -data DIR",
			archivePath, c.files, mib(c.bytes), dir, mib(int64(free)), mib(freeMargin))
	}
	return nil
}

// freeMargin is what a restore leaves free besides the archive's files:
// directories, and room for the server to start writing.
const freeMargin = 16 << 20

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// checkEmpty refuses a data directory that holds anything.
func checkEmpty(dir string) error {
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("the data directory %s is not a directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("refusing to restore into %s: it is not empty (%d entries, such as %s); "+
			"restore into a new or empty directory with -data DIR, or move this one away first",
			dir, len(entries), entries[0].Name())
	}
	return nil
}

// extract unpacks a backup into dir, every file 0600 and fsynced, every
// directory 0700, entry by entry as walk vets them; a damaged or
// truncated archive fails at the damaged entry or at the end, where gzip
// checks its checksum and length.
func extract(archivePath, dir string, l Layout, lim Limits) (files int, err error) {
	err = walk(archivePath, l, lim, func(h *tar.Header, name string, r io.Reader) error {
		p := filepath.Join(dir, name)
		if h.Typeflag == tar.TypeDir {
			return os.MkdirAll(p, 0o700)
		}
		if err := writeEntry(p, r, h.ModTime); err != nil {
			return err
		}
		files++
		return nil
	})
	return files, err
}

// contents is what an archive would restore: its files and their bytes
// as their headers declare them (a tar reader yields no more).
type contents struct {
	files int
	bytes int64 // rounded up to whole blocks, as a file system stores them
}

// scan reads the whole archive without writing anything: every check
// extract makes, and the totals the free-space check needs.
func scan(archivePath string, l Layout, lim Limits) (c contents, err error) {
	err = walk(archivePath, l, lim, func(h *tar.Header, _ string, r io.Reader) error {
		if h.Typeflag == tar.TypeReg {
			c.files++
			c.bytes += (h.Size + blockSize - 1) / blockSize * blockSize
		}
		return nil
	})
	return c, err
}

// blockSize is the allocation unit the free-space check assumes.
const blockSize = 4096

// walk opens a backup, checks its manifest and hands each entry to fn
// once it is vetted: a plain relative name, a regular file or a
// directory, a file no larger than lim allows for its place in the data
// directory. An error of fn is returned as it is (wrapped as damage when
// it came from reading the archive); walk then reads gzip to its end so
// that its checksum and length are checked too.
func walk(archivePath string, l Layout, lim Limits, fn func(h *tar.Header, name string, r io.Reader) error) error {
	f, err := os.Open(archivePath)
	if err != nil {
		return err
	}
	defer f.Close()
	damaged := func(err error) error {
		return fmt.Errorf("%s is damaged or truncated: %w", archivePath, err)
	}
	gz, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s is not a gzip file: %w", archivePath, err)
	}
	// Any error reading the archive is damage; errors writing are not.
	src := &readErr{r: gz}
	tr := tar.NewReader(src)
	if err := readManifest(archivePath, tr, l); err != nil {
		return err
	}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return damaged(err)
		}
		name, err := entryPath(h.Name)
		if err != nil {
			return fmt.Errorf("%s: %w", archivePath, err)
		}
		switch h.Typeflag {
		case tar.TypeDir:
		case tar.TypeReg:
			if err := lim.check(filepath.ToSlash(name), h.Size, l); err != nil {
				return fmt.Errorf("%s: %w", archivePath, err)
			}
		default:
			return fmt.Errorf("%s: entry %q is a %s; a frontdesk backup holds only regular files and directories",
				archivePath, h.Name, typeName(h.Typeflag))
		}
		if err := fn(h, name, tr); err != nil {
			if src.err != nil || errors.Is(err, io.ErrUnexpectedEOF) {
				return damaged(err)
			}
			return fmt.Errorf("%s: %w", h.Name, err)
		}
	}
	if _, err := io.Copy(io.Discard, src); err != nil {
		return damaged(err)
	}
	return nil
}

// readManifest reads the first entry, which must be a manifest of this
// format and layout.
func readManifest(archivePath string, tr *tar.Reader, l Layout) error {
	h, err := tr.Next()
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s is damaged or truncated: %w", archivePath, err)
	}
	if err != nil || h.Name != ManifestName {
		return fmt.Errorf("%s is not a frontdesk backup (its first entry is not %s)", archivePath, ManifestName)
	}
	var m Manifest
	if err := json.NewDecoder(io.LimitReader(tr, 1<<20)).Decode(&m); err != nil {
		return fmt.Errorf("%s: bad %s: %w", archivePath, ManifestName, err)
	}
	if m.Format != Format {
		return fmt.Errorf("%s has backup format %d; this frontdesk reads format %d", archivePath, m.Format, Format)
	}
	if m.ChatLog != l.ChatLog || m.Memory != l.Memory {
		return fmt.Errorf("%s keeps the chat log at %s and memory in %s inside the data directory; "+
			"this configuration expects %s and %s: restore with the configuration the backup was made with",
			archivePath, m.ChatLog, m.Memory, l.ChatLog, l.Memory)
	}
	return nil
}

// readErr remembers the first error other than io.EOF its reader returned.
type readErr struct {
	r   io.Reader
	err error
}

func (r *readErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF && r.err == nil {
		r.err = err
	}
	return n, err
}

// entryPath turns an archive name into a relative path inside the target,
// refusing absolute names and any ".." component.
func entryPath(name string) (string, error) {
	clean := strings.TrimSuffix(name, "/")
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("entry %q %s; refusing the archive", name, why)
	}
	switch {
	case clean == "" || clean == ".":
		return bad("has no name")
	case strings.HasPrefix(clean, "/") || filepath.IsAbs(clean):
		return bad("is an absolute path")
	case strings.ContainsRune(clean, 0) || strings.Contains(clean, `\`):
		return bad("has a NUL or a backslash")
	case slices.Contains(strings.Split(clean, "/"), ".."):
		return bad("climbs out with ..")
	case !filepath.IsLocal(filepath.FromSlash(clean)):
		return bad("is not a plain relative path")
	}
	return filepath.FromSlash(clean), nil
}

// writeEntry writes one file 0600 (creating its directories 0700) with
// its modification time, and fsyncs it. An entry that names an existing file is refused: a backup
// never holds a name twice.
func writeEntry(p string, r io.Reader, mtime time.Time) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	if !mtime.IsZero() {
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// syncTree fsyncs every directory under dir, deepest first, so that the
// files created in each are durable before the final rename.
func syncTree(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	for _, d := range slices.Backward(dirs) {
		if err := atomicfile.SyncDir(d); err != nil {
			return err
		}
	}
	return nil
}

func typeName(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "symbolic link"
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar, tar.TypeBlock:
		return "device"
	case tar.TypeFifo:
		return "FIFO"
	}
	return fmt.Sprintf("entry of type %q", t)
}
