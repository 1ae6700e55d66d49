package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
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

const backupUsage = `usage: frontdesk backup -o FILE.tar.gz [-config FILE] [-data DIR]
       frontdesk restore [-config FILE] [-data DIR] FILE.tar.gz

backup   writes a consistent snapshot of the data directory to FILE.tar.gz,
         with the server running or stopped: the chat log and its rotated
         parts, memory, session.json, the email spool and cursor, audit
         files and everything else there, except the search index (derived:
         the next start rebuilds it). The server goes on while it runs.
restore  extracts FILE.tar.gz into the data directory, which must be empty
         or absent; a failed restore leaves nothing behind.

flags:
  -o FILE        the archive to write (backup); - for stdout
  -config FILE   config file (default config.yaml if present)
  -data DIR      data directory (overrides data_dir)
`

// manifestName is the first entry of every backup. Restore reads it to
// know the archive is one of ours and how it was laid out; it is not
// extracted.
const manifestName = "frontdesk-backup.json"

// manifest describes a backup.
type manifest struct {
	Format  int       `json:"format"` // 1
	Created time.Time `json:"created"`
	Version string    `json:"version"` // of the frontdesk that wrote it
	// ChatLog and Memory are the chat log's and the memory directory's
	// paths inside the data directory, slash-separated.
	ChatLog string `json:"chat_log"`
	Memory  string `json:"memory"`
}

const backupFormat = 1

// layout is where a configuration puts things inside its data directory.
type layout struct {
	dataDir string // absolute
	chatLog string // chat log path relative to dataDir, slash-separated
	memory  string // memory dir relative to dataDir, slash-separated
	index   string // absolute path of the search index
}

// dataLayout checks that everything a backup holds lives in the data
// directory: a chat log or memory directory configured elsewhere would not
// round-trip through an archive of the data directory.
func dataLayout(cfg config.Config) (layout, error) {
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			return filepath.Clean(p)
		}
		return a
	}
	l := layout{dataDir: abs(cfg.DataDir), index: abs(indexPath(cfg))}
	inside := func(key, p string) (string, error) {
		rel, err := filepath.Rel(l.dataDir, abs(p))
		if err != nil || !filepath.IsLocal(rel) {
			return "", fmt.Errorf("%s %s is outside data_dir %s: backup and restore cover the data directory only; "+
				"leave %s empty (it then derives from data_dir)", key, p, l.dataDir, key)
		}
		return filepath.ToSlash(rel), nil
	}
	var err error
	if l.chatLog, err = inside("session.chat_log_path", cfg.Session.ChatLogPath); err != nil {
		return l, err
	}
	if l.memory, err = inside("memory.dir", cfg.Memory.Dir); err != nil {
		return l, err
	}
	return l, nil
}

// backupStep is called between the steps of copying the chat log; tests
// replace it to rotate the log at the worst moments.
var backupStep = func(step string) {}

// runBackup runs "frontdesk backup …"; args are those after "backup".
func runBackup(args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("frontdesk backup", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	cfgPath := fl.String("config", "", "")
	dataDir := fl.String("data", "", "")
	out := fl.String("o", "", "")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stderr, backupUsage)
			return nil
		}
		return fmt.Errorf("backup: %w (see frontdesk backup -h)", err)
	}
	if fl.NArg() > 0 {
		return fmt.Errorf("backup: unexpected argument %q (see frontdesk backup -h)", fl.Arg(0))
	}
	if *out == "" {
		return errors.New("backup: missing -o FILE.tar.gz (see frontdesk backup -h)")
	}
	cfg, err := loadConfig(*cfgPath, "", *dataDir)
	if err != nil {
		return err
	}
	l, err := dataLayout(cfg)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	if st, err := os.Stat(l.dataDir); err != nil || !st.IsDir() {
		return fmt.Errorf("backup: no data directory at %s (wrong -data or -config?)", l.dataDir)
	}
	var sum backupSum
	if *out == "-" {
		sum, err = streamBackup(l, stdout)
		stdout = stderr // the summary must not corrupt the archive
	} else {
		sum, err = writeBackup(l, *out)
	}
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	fmt.Fprintf(stdout, "frontdesk: backed up %s to %s: %d files, %d bytes%s\n", l.dataDir, *out, sum.files, sum.bytes, sum.seqNote())
	for _, s := range sum.skipped {
		fmt.Fprintf(stderr, "frontdesk: left out %s (not a regular file)\n", s)
	}
	return nil
}

// backupSum is what a backup wrote.
type backupSum struct {
	files   int
	bytes   int64
	lastSeq int64    // seq of the live chat log's last complete line; 0 if unknown
	skipped []string // special files left out
}

func (s backupSum) seqNote() string {
	if s.lastSeq == 0 {
		return ""
	}
	return fmt.Sprintf(", chat log up to seq %d", s.lastSeq)
}

// writeBackup writes the archive to a temporary file beside out and
// renames it over out once complete and on disk, so a failed backup never
// leaves a truncated archive under the name asked for.
func writeBackup(l layout, out string) (sum backupSum, err error) {
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
	a := &archive{tw: tar.NewWriter(gz), dirs: map[string]bool{}, sum: &sum, now: time.Now()}
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

// streamBackup writes the archive to w (frontdesk backup -o -).
func streamBackup(l layout, w io.Writer) (sum backupSum, err error) {
	gz := gzip.NewWriter(w)
	a := &archive{tw: tar.NewWriter(gz), dirs: map[string]bool{}, sum: &sum, now: time.Now()}
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
	l    layout
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
	if err := b.tree(filepath.Join(b.l.dataDir, "email"), nil); err != nil {
		return err
	}
	if err := b.chatLog(); err != nil {
		return err
	}
	return b.tree(b.l.dataDir, func(p string) bool {
		return p == filepath.Join(b.l.dataDir, "email") || b.isLogPart(p) || b.isIndex(p)
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
	livePath := filepath.Join(b.l.dataDir, filepath.FromSlash(b.l.chatLog))
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
	backupStep("parts-copied")

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
		backupStep("live-opened")
		if liveInfo, err = live.Stat(); err != nil {
			return err
		}
		if err := b.a.lines(b.rel(livePath), live, liveInfo); err != nil {
			return fmt.Errorf("copy %s: %w", livePath, err)
		}
	}
	backupStep("live-copied")

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
func (b *backup) isLogPart(p string) bool {
	live := filepath.Join(b.l.dataDir, filepath.FromSlash(b.l.chatLog))
	if filepath.Dir(p) != filepath.Dir(live) {
		return false
	}
	name, base := filepath.Base(p), filepath.Base(live)
	ext := filepath.Ext(base)
	return name == base || strings.HasPrefix(name, strings.TrimSuffix(base, ext)+"-") &&
		(strings.HasSuffix(name, ext) || strings.HasSuffix(name, ext+".gz"))
}

// isIndex reports whether p is the search index or one of SQLite's side
// files: derived data, rebuilt from the log at the next start.
func (b *backup) isIndex(p string) bool {
	for _, sfx := range []string{"", "-wal", "-shm", "-journal"} {
		if p == b.l.index+sfx {
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
			if p == b.l.dataDir {
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
			b.a.sum.skipped = append(b.a.sum.skipped, p)
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
	r, _ := filepath.Rel(b.l.dataDir, p)
	return filepath.ToSlash(r)
}

// archive writes tar entries: directories 0700, files 0600, as frontdesk
// creates them.
type archive struct {
	tw   *tar.Writer
	dirs map[string]bool // directory entries written
	sum  *backupSum
	now  time.Time
}

func (a *archive) manifest(l layout) error {
	b, err := json.MarshalIndent(manifest{Format: backupFormat, Created: a.now.UTC(), Version: version,
		ChatLog: l.chatLog, Memory: l.memory}, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if err := a.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: manifestName, Mode: 0o600,
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
		a.sum.lastSeq = s
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
	a.sum.files++
	a.sum.bytes += size
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
