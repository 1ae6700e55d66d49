// Package index is the full-text index over everything ever said: every
// user and assistant message of the chat log (live file and rotated parts)
// and every section of long-term memory. It is a derived store (STYLE 20):
// an SQLite database with an FTS5 table beside the chat log, which may be
// deleted at any time and is rebuilt from the log. It imports only event of
// ours; main feeds it through a Follower.
//
// SQLite comes from modernc.org/sqlite, a pure-Go translation of the C
// library that ships FTS5, so the binary stays static with no cgo.
package index

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/frontdesk-hq/frontdesk/event"
)

// SchemaVersion is stored in the index; an index with another version is
// rebuilt, never trusted. Bump it whenever the schema, the tokenizer or
// what a document holds changes.
const SchemaVersion = 2

// FileName is the index's name inside data_dir.
const FileName = "search.db"

// TypeMemory is the document type of a long-term memory section.
const TypeMemory = "memory"

// schema: docs holds what a hit shows and what filters test; fts indexes
// docs.content without storing it twice (an external-content table).
// Events use their seq as id; memory sections ids from memoryBase up,
// above every seq, so a window of the newest ids always holds them.
//
// The tokenizer folds case and diacritics (unicode61 remove_diacritics 2:
// "Müller" is "muller") and stems English (porter: "birthdays" and
// "birthday", "leaking" and "leaks" meet).
const schema = `
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE docs(
	id      INTEGER PRIMARY KEY,
	ts      INTEGER NOT NULL,
	turn    TEXT NOT NULL,
	type    TEXT NOT NULL,
	channel TEXT NOT NULL,
	sender  TEXT NOT NULL,
	content TEXT NOT NULL,
	len     INTEGER NOT NULL -- words in content, for ranking
);
CREATE VIRTUAL TABLE fts USING fts5(
	content, content='docs', content_rowid='id',
	tokenize='porter unicode61 remove_diacritics 2'
);
`

// Index is an open index. Search may be called from any goroutine; the
// writing methods (Add, SetMemory) from one goroutine at a time — the
// Follower's.
type Index struct {
	db       *sql.DB
	path     string
	readOnly bool
	fresh    bool // init made the schema: nothing in the file to check

	vmu sync.Mutex // held while the vectors change (vecs and vec together)
	vec vecStore   // the vectors, for search by meaning (vectors.go)
}

// memoryBase is the first memory section's id: far above any seq.
const memoryBase = int64(1) << 62

// Doc is one indexed document: a user or assistant message, or a memory
// section.
type Doc struct {
	// ID is the event's seq; SetMemory numbers memory sections itself.
	ID      int64
	TS      time.Time
	Turn    string
	Type    string
	Channel string
	From    string
	Content string
}

// ErrCorrupt wraps an error that means the file is not a usable index:
// damaged, not a database, or written by another schema version.
var ErrCorrupt = errors.New("index is damaged or from another version")

// errVersion marks an index of another schema version: sound but not
// ours, so it is removed, not kept aside like a damaged one.
var errVersion = fmt.Errorf("%w: another schema version", ErrCorrupt)

// Open opens the index at path for reading and writing, creating it if it
// does not exist. A file of another schema version is removed and one
// that is damaged or not a database set aside (SetAside), and the index
// made anew: rebuilt says why (empty when the existing index was used).
// Open reads only the file's first pages: damage further in shows in
// Check (the Follower runs it after opening) or when a query reads it.
// The caller then catches the index up with the log (see Follower).
func Open(path string) (ix *Index, rebuilt string, err error) {
	ix, err = open(path, false)
	if err == nil {
		return ix, "", nil
	}
	if !errors.Is(err, ErrCorrupt) {
		return nil, "", err
	}
	rebuilt = err.Error()
	if errors.Is(err, errVersion) {
		err = Remove(path)
	} else {
		var aside string
		if aside, err = SetAside(path, time.Now()); err == nil {
			rebuilt += "; the damaged file is kept as " + aside
		}
	}
	if err != nil {
		return nil, "", err
	}
	ix, err = open(path, false)
	return ix, rebuilt, err
}

// Check reads every page of the index and verifies its structure
// (SQLite's PRAGMA quick_check, stopping at the first fault): an
// ErrCorrupt-wrapped error says what is damaged. It costs about 4 s of
// CPU for the 203 MB index of a million events (BenchmarkIndexOpenCheck),
// which is why the Follower runs it in the background; ctx stops it.
func (ix *Index) Check(ctx context.Context) error {
	rows, err := ix.db.QueryContext(ctx, `PRAGMA quick_check(1)`)
	if err != nil {
		return classify("check index", err)
	}
	defer rows.Close()
	var faults []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return classify("check index", err)
		}
		if s != "ok" {
			faults = append(faults, s)
		}
	}
	if err := rows.Err(); err != nil {
		return classify("check index", err)
	}
	if len(faults) > 0 {
		return fmt.Errorf("%w: check index: %s", ErrCorrupt, strings.Join(faults, "; "))
	}
	return nil
}

// OpenReadOnly opens an existing index without writing to it, for the
// offline history command. It fails with os.ErrNotExist when there is no
// index and ErrCorrupt when it cannot be trusted.
func OpenReadOnly(path string) (*Index, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	return open(path, true)
}

// OpenMemory returns an empty index held in memory (the offline history
// command indexes the log into one when there is no index file).
func OpenMemory() (*Index, error) {
	return open("", false)
}

// damagedSuffix names a damaged index kept aside: search.db.damaged-<time>.
const damagedSuffix = ".damaged-"

// SetAside moves a damaged index out of the way, for a look later: path
// (with its -wal) becomes path.damaged-<UTC time>, SQLite's other side
// files are removed, and so is any copy an earlier SetAside kept — the
// index is derived from the log, so one copy is enough to see what
// happened. It returns the new name.
func SetAside(path string, now time.Time) (string, error) {
	old, _ := filepath.Glob(globEscape(path) + damagedSuffix + "*")
	for _, p := range old {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("set damaged index aside: %w", err)
		}
	}
	aside := path + damagedSuffix + now.UTC().Format("20060102T150405Z")
	for _, side := range []string{"", "-wal"} {
		if err := os.Rename(path+side, aside+side); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("set damaged index aside: %w", err)
		}
	}
	for _, p := range []string{path + "-shm", path + "-journal"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("set damaged index aside: %w", err)
		}
	}
	return aside, nil
}

// globEscape quotes the pattern characters of a path for filepath.Glob.
func globEscape(p string) string {
	var b strings.Builder
	for _, r := range p {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Remove deletes the index file and SQLite's side files.
func Remove(path string) error {
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove index: %w", err)
		}
	}
	return nil
}

func open(path string, readOnly bool) (*Index, error) {
	var dsn string
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_txlock", "immediate")
	switch {
	case path == "":
		// One connection: each in-memory connection is a database of its own.
		dsn = "file::memory:?" + q.Encode()
	case readOnly:
		q.Set("mode", "ro")
		dsn = "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
	default:
		// WAL: searches read while the follower writes. NORMAL: a power
		// cut may lose the last transactions, never corrupt; the index
		// catches up from the log anyway.
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(NORMAL)")
		// Freed space is zeroed: an erased message's words leave the
		// file, not only the index (see Erase).
		q.Add("_pragma", "secure_delete(1)")
		dsn = "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
	}
	if path != "" && !readOnly {
		// Made here so it is private like every file in data_dir; SQLite
		// gives its -wal and -shm files the same mode, and takes an empty
		// file for a new database.
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("open index: %w", err)
		}
		f.Close()
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open index: %w", err)
	}
	if path == "" {
		db.SetMaxOpenConns(1)
	}
	ix := &Index{db: db, path: path, readOnly: readOnly}
	if err := ix.init(); err != nil {
		db.Close()
		return nil, err
	}
	return ix, nil
}

// init checks the schema version, creating the schema in an empty file.
func (ix *Index) init() error {
	ctx := context.Background()
	var n int
	err := ix.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema`).Scan(&n)
	if err != nil {
		return classify("read index", err)
	}
	if n == 0 {
		if ix.readOnly {
			return fmt.Errorf("%w: the file is empty", ErrCorrupt)
		}
		tx, err := ix.db.BeginTx(ctx, nil)
		if err != nil {
			return classify("create index", err)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, schema+vecSchema+";"+secureDelete); err != nil {
			return classify("create index", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta VALUES('schema_version', ?), ('last_seq', '0'), ('memory_hash', ''), ('docs', '0'), ('words', '0'),
			('embed_model', ''), ('embed_dim', '0')`,
			strconv.Itoa(SchemaVersion)); err != nil {
			return classify("create index", err)
		}
		ix.fresh = true
		return classify("create index", tx.Commit())
	}
	v, err := ix.meta(ctx, "schema_version")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if v != strconv.Itoa(SchemaVersion) {
		return fmt.Errorf("%w: %q, want %d", errVersion, v, SchemaVersion)
	}
	if ix.readOnly {
		return nil
	}
	// An index made before search by meaning gains the vectors' table:
	// it holds no vectors yet, and the messages need not be indexed anew.
	_, err = ix.db.ExecContext(ctx, vecSchema+`; INSERT OR IGNORE INTO meta VALUES('embed_model', ''), ('embed_dim', '0');`+secureDelete)
	return classify("update index", err)
}

// classify marks SQLite's "this is not a usable database" errors as
// ErrCorrupt and wraps the rest with what was being done.
func classify(what string, err error) error {
	if err == nil {
		return nil
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("%w: %s: %v", ErrCorrupt, what, err)
		}
	}
	if strings.Contains(err.Error(), "no such table") || strings.Contains(err.Error(), "no such column") {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// Close closes the index.
func (ix *Index) Close() error { return ix.db.Close() }

// Path returns the index file's path ("" for one in memory).
func (ix *Index) Path() string { return ix.path }

func (ix *Index) meta(ctx context.Context, key string) (string, error) {
	var v string
	err := ix.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("meta %s is missing", key)
	}
	return v, err
}

// LastSeq returns the seq of the newest chat-log event the index has seen.
func (ix *Index) LastSeq(ctx context.Context) (int64, error) {
	v, err := ix.meta(ctx, "last_seq")
	if err != nil {
		return 0, classify("read index", err)
	}
	return strconv.ParseInt(v, 10, 64)
}

// MemoryHash returns the hash SetMemory last stored.
func (ix *Index) MemoryHash(ctx context.Context) (string, error) {
	v, err := ix.meta(ctx, "memory_hash")
	return v, classify("read index", err)
}

// Add indexes the user and assistant messages among evs (other types only
// advance LastSeq) in one transaction, and records the newest seq as
// LastSeq. Events at or below LastSeq are skipped, so a catch-up that
// overlaps what is indexed doubles nothing. An assistant message takes the
// channel of its turn's input.
func (ix *Index) Add(ctx context.Context, evs []event.Event) error {
	if len(evs) == 0 {
		return nil
	}
	last, err := ix.LastSeq(ctx)
	if err != nil {
		return err
	}
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return classify("index events", err)
	}
	defer tx.Rollback()
	insDoc, err := tx.PrepareContext(ctx, `INSERT INTO docs(id, ts, turn, type, channel, sender, content, len) VALUES(?,?,?,?,?,?,?,?)`)
	if err != nil {
		return classify("index events", err)
	}
	defer insDoc.Close()
	insFTS, err := tx.PrepareContext(ctx, `INSERT INTO fts(rowid, content) VALUES(?,?)`)
	if err != nil {
		return classify("index events", err)
	}
	defer insFTS.Close()
	turnChannel := map[string]string{}
	newest := last
	var docs, words int64
	for _, e := range evs {
		if e.Seq <= newest {
			continue
		}
		newest = e.Seq
		d, ok := docOf(e)
		if !ok {
			continue // not a message, or a payload that does not decode
		}
		switch d.Type {
		case string(event.User):
			turnChannel[d.Turn] = d.Channel
		case string(event.Assistant):
			d.Channel = turnChannel[d.Turn]
			if d.Channel == "" {
				// The input is in an earlier batch; a turn's id is "t"
				// and its input's seq.
				if seq, err := strconv.ParseInt(strings.TrimPrefix(d.Turn, "t"), 10, 64); err == nil {
					_ = tx.QueryRowContext(ctx, `SELECT channel FROM docs WHERE id = ?`, seq).Scan(&d.Channel)
				}
			}
		}
		n := countWords(d.Content)
		if _, err := insDoc.ExecContext(ctx, d.ID, d.TS.UnixMilli(), d.Turn, d.Type, d.Channel, d.From, d.Content, n); err != nil {
			return classify("index events", err)
		}
		docs, words = docs+1, words+n
		if _, err := insFTS.ExecContext(ctx, d.ID, d.Content); err != nil {
			return classify("index events", err)
		}
	}
	if newest == last {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE meta SET value = ? WHERE key = 'last_seq'`, strconv.FormatInt(newest, 10)); err != nil {
		return classify("index events", err)
	}
	if err := addTotals(ctx, tx, docs, words); err != nil {
		return classify("index events", err)
	}
	return classify("index events", tx.Commit())
}

// docOf returns the document for a user or assistant event.
func docOf(e event.Event) (Doc, bool) {
	m, ok := e.Message()
	d := Doc{ID: e.Seq, TS: e.TS.Std(), Turn: e.Turn, Type: string(e.Type), Channel: m.Channel, From: m.From, Content: m.Content}
	if len(m.Attachments) > 0 {
		// The names are searchable ("the invoice pdf"); the bytes are not.
		names := make([]string, len(m.Attachments))
		for i, a := range m.Attachments {
			names[i] = a.Name
		}
		d.Content = strings.TrimSpace(d.Content + "\n[attached: " + strings.Join(names, ", ") + "]")
	}
	return d, ok && strings.TrimSpace(d.Content) != ""
}

// SetMemory replaces the indexed memory sections with docs (their IDs are
// assigned here) and stores hash, so a caller can skip an unchanged
// memory file.
func (ix *Index) SetMemory(ctx context.Context, docs []Doc, hash string) error {
	ix.vmu.Lock() // the sections' vectors go with them
	defer ix.vmu.Unlock()
	tx, err := ix.db.BeginTx(ctx, nil)
	if err != nil {
		return classify("index memory", err)
	}
	defer tx.Rollback()
	var oldDocs, oldWords int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(len), 0) FROM docs WHERE id >= ?`, memoryBase).Scan(&oldDocs, &oldWords); err != nil {
		return classify("index memory", err)
	}
	// An external-content FTS table forgets a row only when told what it
	// held.
	if _, err := tx.ExecContext(ctx, `INSERT INTO fts(fts, rowid, content) SELECT 'delete', id, content FROM docs WHERE id >= ?`, memoryBase); err != nil {
		return classify("index memory", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM docs WHERE id >= ?`, memoryBase); err != nil {
		return classify("index memory", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM vecs WHERE id >= ?`, memoryBase); err != nil {
		return classify("index memory", err)
	}
	var words int64
	for i, d := range docs {
		id := memoryBase + int64(i)
		n := countWords(d.Content)
		words += n
		if _, err := tx.ExecContext(ctx, `INSERT INTO docs(id, ts, turn, type, channel, sender, content, len) VALUES(?,?,'',?,'','',?,?)`,
			id, d.TS.UnixMilli(), TypeMemory, d.Content, n); err != nil {
			return classify("index memory", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO fts(rowid, content) VALUES(?,?)`, id, d.Content); err != nil {
			return classify("index memory", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE meta SET value = ? WHERE key = 'memory_hash'`, hash); err != nil {
		return classify("index memory", err)
	}
	if err := addTotals(ctx, tx, int64(len(docs))-oldDocs, words-oldWords); err != nil {
		return classify("index memory", err)
	}
	if err := tx.Commit(); err != nil {
		return classify("index memory", err)
	}
	ix.vec.removeFrom(memoryBase)
	// The old sections' words leave the WAL and the file now, not at the
	// next automatic checkpoint: an item edited or deleted because it
	// quoted an erased message must not linger (see Erase). Best effort:
	// a reader holding the WAL only delays it to the next change.
	_ = ix.checkpoint(ctx)
	return nil
}

// UpdateMemory replaces the indexed memory sections with docs unless they
// are what the index holds already (compared by a hash of their times and
// texts), so calling it on every change notice — or every search — costs
// a hash, not a rewrite.
func (ix *Index) UpdateMemory(ctx context.Context, docs []Doc) error {
	h := sha256.New()
	for _, d := range docs {
		h.Write([]byte(strconv.FormatInt(d.TS.UnixMilli(), 10) + "\x00" + d.Content + "\x00"))
	}
	sum := hex.EncodeToString(h.Sum(nil))
	old, err := ix.MemoryHash(ctx)
	if err != nil || old == sum {
		return err
	}
	return ix.SetMemory(ctx, docs, sum)
}

// addTotals keeps the document and word counts that give the average
// document length.
func addTotals(ctx context.Context, tx *sql.Tx, docs, words int64) error {
	_, err := tx.ExecContext(ctx, `UPDATE meta SET value = CAST(value AS INTEGER) + CASE key WHEN 'docs' THEN ? ELSE ? END
		WHERE key IN ('docs', 'words')`, docs, words)
	return err
}

// avgWords is the average document length in words (1 for an empty index).
func (ix *Index) avgWords(ctx context.Context) (float64, error) {
	var docs, words float64
	err := ix.db.QueryRowContext(ctx, `SELECT
		(SELECT CAST(value AS REAL) FROM meta WHERE key = 'docs'),
		(SELECT CAST(value AS REAL) FROM meta WHERE key = 'words')`).Scan(&docs, &words)
	if err != nil {
		return 1, classify("search", err)
	}
	if docs == 0 || words == 0 {
		return 1, nil
	}
	return words / docs, nil
}

// countWords counts content's tokens the way the tokenizer splits them.
func countWords(s string) int64 {
	var n int64
	in := false
	for _, r := range s {
		w := unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
		if w && !in {
			n++
		}
		in = w
	}
	return n
}

// Stats describes the index, for logs and benchmarks.
type Stats struct {
	Docs    int64 // indexed documents
	LastSeq int64
	Vectors int64 // documents with a vector (search by meaning)
}

// Stats counts what the index holds.
func (ix *Index) Stats(ctx context.Context) (Stats, error) {
	var s Stats
	if err := ix.db.QueryRowContext(ctx, `SELECT count(*) FROM docs`).Scan(&s.Docs); err != nil {
		return s, classify("read index", err)
	}
	// An index made before search by meaning, opened read-only, has no
	// vecs table: no vectors.
	_ = ix.db.QueryRowContext(ctx, `SELECT count(*) FROM vecs`).Scan(&s.Vectors)
	var err error
	s.LastSeq, err = ix.LastSeq(ctx)
	return s, err
}
