// Package backup writes and restores archives of a data directory:
// "frontdesk backup" and "frontdesk restore". A backup is a consistent
// snapshot taken while the server runs (see (*backup).run); a restore
// checks the whole archive — its entries' names, types and sizes against
// what the data directory can hold, the free space — before it writes
// anything, and writes all or nothing.
package backup

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
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
	"time"

	"github.com/frontdesk-hq/frontdesk/config"
	"github.com/frontdesk-hq/frontdesk/history"
	"github.com/frontdesk-hq/frontdesk/internal/atomicfile"
)

// ManifestName is the first entry of every backup. Restore reads it to
// know the archive is one of ours and how it was laid out; it is not
// extracted.
const ManifestName = "frontdesk-backup.json"

// Manifest describes a backup; it is the archive's first entry, ManifestName.
type Manifest struct {
	Format  int       `json:"format"` // 1
	Created time.Time `json:"created"`
	Version string    `json:"version"` // of the frontdesk that wrote it
	// ChatLog and Memory are the chat log's and the memory directory's
	// paths inside the data directory, slash-separated.
	ChatLog string `json:"chat_log"`
	Memory  string `json:"memory"`
}

const Format = 1

// Layout is where a configuration puts things inside its data directory.
type Layout struct {
	DataDir string // absolute
	ChatLog string // chat log path relative to DataDir, slash-separated
	Memory  string // memory dir relative to DataDir, slash-separated
	Index   string // absolute path of the search index
	// NATS is the absolute path of a cluster node's embedded JetStream
	// store when it is inside the data directory, else "". It is left out:
	// the node's own files are a whole copy of the cluster's log, and a
	// live JetStream store copied file by file is not a consistent one.
	NATS string
}

// NewLayout is cfg's layout, index the search index's path. It checks that everything a backup holds lives in the data
// directory: a chat log or memory directory configured elsewhere would not
// round-trip through an archive of the data directory.
func NewLayout(cfg config.Config, index string) (Layout, error) {
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			return filepath.Clean(p)
		}
		return a
	}
	l := Layout{DataDir: abs(cfg.DataDir), Index: abs(index)}
	inside := func(key, p string) (string, error) {
		rel, err := filepath.Rel(l.DataDir, abs(p))
		if err != nil || !filepath.IsLocal(rel) {
			return "", fmt.Errorf("%s %s is outside data_dir %s: backup and restore cover the data directory only; "+
				"leave %s empty (it then derives from data_dir)", key, p, l.DataDir, key)
		}
		return filepath.ToSlash(rel), nil
	}
	var err error
	if l.ChatLog, err = inside("session.chat_log_path", cfg.Session.ChatLogPath); err != nil {
		return l, err
	}
	if l.Memory, err = inside("memory.dir", cfg.Memory.Dir); err != nil {
		return l, err
	}
	if c := cfg.Cluster; c.Enabled() && c.NATS.URL == "" {
		if _, err := inside("", c.NATS.Embedded.StoreDir); err == nil {
			l.NATS = abs(c.NATS.Embedded.StoreDir)
		}
	}
	return l, nil
}

// step is called between the steps of copying the chat log; tests
// replace it to rotate the log at the worst moments.
var step = func(string) {}

// Sum is what a backup wrote.
type Sum struct {
	Files   int
	Bytes   int64
	LastSeq int64    // seq of the live chat log's last complete line; 0 if unknown
	Skipped []string // special files left out
}

// SeqNote is ", chat log up to seq N", or "" when the seq is unknown.
func (s Sum) SeqNote() string {
	if s.LastSeq == 0 {
		return ""
	}
	return fmt.Sprintf(", chat log up to seq %d", s.LastSeq)
}

// Write writes the archive to a temporary file beside out and
// renames it over out once complete and on disk, so a failed backup never
// leaves a truncated archive under the name asked for.
func Write(l Layout, out, version string) (sum Sum, err error) {
	absOut, err := filepath.Abs(out)
	if err != nil {
		return sum, err
	}
	f, err := os.CreateTemp(filepath.Dir(absOut), "."+filepath.Base(absOut)+".tmp-*")
	if err != nil {
		return sum, fmt.Errorf("create %s: %w", out, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return sum, err
	}
	gz := gzip.NewWriter(f)
	a := &archive{tw: tar.NewWriter(gz), dirs: map[string]bool{}, sum: &sum, now: time.Now(), version: version}
	b := &backup{l: l, a: a, skip: map[string]bool{absOut: true, f.Name(): true}}
	if err := b.run(); err != nil {
		return sum, err
	}
	if err := a.tw.Close(); err != nil {
		return sum, err
	}
	if err := gz.Close(); err != nil {
		return sum, err
	}
	if err := f.Sync(); err != nil {
		return sum, err
	}
	if err := f.Close(); err != nil {
		return sum, err
	}
	if err := os.Rename(f.Name(), absOut); err != nil {
		return sum, err
	}
	return sum, atomicfile.SyncDir(filepath.Dir(absOut))
}

// Stream writes the archive to w (frontdesk backup -o -).
func Stream(l Layout, w io.Writer, version string) (sum Sum, err error) {
	gz := gzip.NewWriter(w)
	a := &archive{tw: tar.NewWriter(gz), dirs: map[string]bool{}, sum: &sum, now: time.Now(), version: version}
	if err := (&backup{l: l, a: a}).run(); err != nil {
		return sum, err
	}
	if err := a.tw.Close(); err != nil {
		return sum, err
	}
	return sum, gz.Close()
}

// backup copies one data directory into an archive.
type backup struct {
	l    Layout
	a    *archive
	skip map[string]bool // absolute paths never to copy (the archive itself)
}

// run copies in an order chosen so that the snapshot looks like a moment a
// crash could have left behind, which the server already knows how to
// resume from:
//
//  1. the email spool and cursor first: the chat log, copied later, may
//     then hold submissions the spool does not yet show as done — on
//     restore they are re-submitted and recognised from the log (the same
//     path as a crash after step 6 of the email pipeline), never answered
//     twice;
//  2. the chat log (rotated parts, then the live file, then any part that
//     appeared meanwhile);
//  3. everything else (session.json, memory, audit, attachments, …) last:
//     anything the copied log refers to (an attachment, a consolidated
//     reset) was written before the log line, so it is in the copy.
func (b *backup) run() error {
	if err := b.a.manifest(b.l); err != nil {
		return err
	}
	if err := b.tree(filepath.Join(b.l.DataDir, "email"), nil); err != nil {
		return err
	}
	if err := b.chatLog(); err != nil {
		return err
	}
	return b.tree(b.l.DataDir, func(p string) bool {
		return p == filepath.Join(b.l.DataDir, "email") || b.isLogPart(p) || b.isIndex(p) || (b.l.NATS != "" && p == b.l.NATS)
	})
}

// chatLog copies the chat log's parts up to a consistent point: the live
// file up to its last complete line at the moment of the copy, and every
// part rotated before it.
//
// A rotation may happen at any moment while this runs (lumberjack renames
// the live file to <base>-<time><ext> and creates a new live file; it
// never writes to a part again). So:
//
//  1. list the rotated parts and copy them (they no longer change);
//  2. open the live file and copy it up to its last '\n' — the open
//     descriptor keeps naming the same file even if it is rotated away
//     while we read;
//  3. list the parts again. A part that appeared was rotated after step 1:
//     either before step 2 opened the live file (its lines precede the
//     live file's: copy it, or they would be missing), or it IS the file
//     step 2 copied, renamed afterwards (same inode: skip it, the copy
//     already holds it up to our consistent point), or it was rotated
//     after that one (its lines come after our point: skip it, or the
//     snapshot would have a hole). Part names embed the rotation time, so
//     "after that one" is "sorts after it".
//
// The snapshot is the log as it stood when step 2 read the live file.
func (b *backup) chatLog() error {
	livePath := filepath.Join(b.l.DataDir, filepath.FromSlash(b.l.ChatLog))
	before, err := rotatedParts(livePath)
	if err != nil {
		return err
	}
	if err := b.a.dirsFor(b.rel(livePath)); err != nil {
		return err
	}
	for _, p := range before {
		if err := b.part(p); err != nil {
			return err
		}
	}
	step("parts-copied")

	live, err := os.Open(livePath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		live = nil // no log yet; a part that appears below still counts
	case err != nil:
		return fmt.Errorf("open chat log: %w", err)
	}
	var liveInfo os.FileInfo
	if live != nil {
		defer live.Close()
		step("live-opened")
		if liveInfo, err = live.Stat(); err != nil {
			return err
		}
		if err := b.a.lines(b.rel(livePath), live, liveInfo); err != nil {
			return fmt.Errorf("copy %s: %w", livePath, err)
		}
	}
	step("live-copied")

	after, err := rotatedParts(livePath)
	if err != nil {
		return err
	}
	var fresh []string
	for _, p := range after {
		if !slices.Contains(before, p) {
			fresh = append(fresh, p)
		}
	}
	slices.Sort(fresh) // oldest first
	for _, p := range fresh {
		if liveInfo != nil {
			if st, err := os.Stat(p); err == nil && os.SameFile(st, liveInfo) {
				break // the live file we copied, and everything after it
			}
		}
		if err := b.part(p); err != nil {
			return err
		}
	}
	return nil
}

// rotatedParts lists the chat log's rotated parts (history.Parts without
// the live file).
func rotatedParts(livePath string) ([]string, error) {
	parts, err := history.Parts(livePath)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(parts, func(p string) bool { return p == livePath }), nil
}

// part copies one rotated part whole; a plain part gzipped by hand in the
// meantime is copied as its .gz twin.
func (b *backup) part(p string) error {
	err := b.a.whole(b.rel(p), p)
	if errors.Is(err, fs.ErrNotExist) && !strings.HasSuffix(p, ".gz") {
		err = b.a.whole(b.rel(p+".gz"), p+".gz")
	}
	if err != nil {
		return fmt.Errorf("copy %s: %w", p, err)
	}
	return nil
}

// isLogPart reports whether p is the live chat log or one of its parts.
func (b *backup) isLogPart(p string) bool { return isLogPartName(b.rel(p), b.l.ChatLog) }

// isIndex reports whether p is the search index or one of SQLite's side
// files: derived data, rebuilt from the log at the next start.
func (b *backup) isIndex(p string) bool {
	for _, sfx := range []string{"", "-wal", "-shm", "-journal"} {
		if p == b.l.Index+sfx {
			return true
		}
	}
	return false
}

// tree copies the files under dir (which may be missing), whole, except
// the paths skip names (with what is under them). Files replaced
// atomically (temp file + rename) are read through one descriptor, so
// each is the old or the new version, never a mix; their leftover temp
// files (.NAME.tmp-*) are not copied.
func (b *backup) tree(dir string, skip func(string) bool) error {
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked (a spool file that was handled)
			}
			return err
		}
		if p != dir && (skip != nil && skip(p) || b.skip[p]) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case d.IsDir():
			if p == b.l.DataDir {
				return nil
			}
			return b.a.dirsFor(b.rel(p) + "/")
		case d.Type().IsRegular():
			if isTempFile(d.Name()) {
				return nil
			}
			if err := b.a.whole(b.rel(p), p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("copy %s: %w", p, err)
			}
			return nil
		default:
			b.a.sum.Skipped = append(b.a.sum.Skipped, p)
			return nil
		}
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// isTempFile matches the temporary files of internal/atomicfile.Write.
func isTempFile(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-")
}

// rel is p relative to the data directory, slash-separated.
func (b *backup) rel(p string) string {
	r, _ := filepath.Rel(b.l.DataDir, p)
	return filepath.ToSlash(r)
}

// archive writes tar entries: directories 0700, files 0600, as frontdesk
// creates them.
type archive struct {
	tw      *tar.Writer
	dirs    map[string]bool // directory entries written
	sum     *Sum
	now     time.Time
	version string // of the frontdesk writing it
}

func (a *archive) manifest(l Layout) error {
	b, err := json.MarshalIndent(Manifest{Format: Format, Created: a.now.UTC(), Version: a.version,
		ChatLog: l.ChatLog, Memory: l.Memory}, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if err := a.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: ManifestName, Mode: 0o600,
		Size: int64(len(b)), ModTime: a.now}); err != nil {
		return err
	}
	_, err = a.tw.Write(b)
	return err
}

// dirsFor writes the entries of the directories that hold rel (and rel
// itself when it ends in "/"), each once.
func (a *archive) dirsFor(rel string) error {
	dir := path.Dir(rel)
	if strings.HasSuffix(rel, "/") {
		dir = strings.TrimSuffix(rel, "/")
	}
	if dir == "." || dir == "" || a.dirs[dir] {
		return nil
	}
	if err := a.dirsFor(dir); err != nil {
		return err
	}
	a.dirs[dir] = true
	return a.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: 0o700, ModTime: a.now})
}

// whole copies the file at p, as it is at the moment it is opened.
func (a *archive) whole(rel, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("not a regular file")
	}
	return a.file(rel, f, st.Size(), st.ModTime())
}

// lines copies an append-only file up to its last complete line at the
// moment of the copy: a partial last line is an append in progress (or a
// crash artefact readers skip anyway), and what follows it is after our
// consistent point.
func (a *archive) lines(rel string, f *os.File, st os.FileInfo) error {
	// Stat again: the size when the copy starts, not when f was opened.
	cur, err := f.Stat()
	if err != nil {
		return err
	}
	end, last, err := lastLine(f, cur.Size())
	if err != nil {
		return err
	}
	if s, ok := lineSeq(last); ok {
		a.sum.LastSeq = s
	}
	return a.file(rel, f, end, st.ModTime())
}

// file writes one regular file entry of size bytes read from r's start.
func (a *archive) file(rel string, r io.ReaderAt, size int64, mtime time.Time) error {
	if err := a.dirsFor(rel); err != nil {
		return err
	}
	if err := a.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: 0o600, Size: size, ModTime: mtime}); err != nil {
		return err
	}
	n, err := io.Copy(a.tw, io.NewSectionReader(r, 0, size))
	if err == nil && n < size {
		err = fmt.Errorf("file shrank while being copied (%d of %d bytes)", n, size)
	}
	if err != nil {
		return err
	}
	a.sum.Files++
	a.sum.Bytes += size
	return nil
}

// lastLine finds the end of the last complete line in f's first size
// bytes (0 if there is none) and returns that line.
func lastLine(f io.ReaderAt, size int64) (end int64, line []byte, err error) {
	const chunk = 64 << 10
	buf := make([]byte, chunk)
	var tail []byte // bytes after a found '\n', kept to return the line
	for hi := size; hi > 0; {
		lo := max(hi-chunk, 0)
		b := buf[:hi-lo]
		if _, err := f.ReadAt(b, lo); err != nil && !errors.Is(err, io.EOF) {
			return 0, nil, err
		}
		if end == 0 {
			i := bytes.LastIndexByte(b, '\n')
			if i < 0 {
				hi = lo
				continue
			}
			end = lo + int64(i) + 1
			b = b[:i]
		}
		// Now look for the newline before the last line.
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return end, append(slices.Clone(b[i+1:]), tail...), nil
		}
		tail = append(slices.Clone(b), tail...)
		if len(tail) > 4<<20 {
			return end, nil, nil // a huge line; its seq is only a note
		}
		hi = lo
	}
	return end, tail, nil
}

// lineSeq is the seq of a chat log line.
func lineSeq(line []byte) (int64, bool) {
	var e struct {
		Seq int64 `json:"seq"`
	}
	if json.Unmarshal(line, &e) != nil || e.Seq <= 0 {
		return 0, false
	}
	return e.Seq, true
}
