package index

import (
	"context"
	"fmt"
)

// ForceSchemaVersionForTest makes the index look written by another
// version.
func (ix *Index) ForceSchemaVersionForTest(v int) error {
	_, err := ix.db.ExecContext(context.Background(), `UPDATE meta SET value = ? WHERE key = 'schema_version'`, v)
	return err
}

// MatchesForTest counts the documents an FTS5 expression matches.
func (ix *Index) MatchesForTest(q string) (int64, error) {
	pq, err := ParseQuery(q)
	if err != nil {
		return 0, err
	}
	var n int64
	err = ix.db.QueryRowContext(context.Background(), `SELECT count(*) FROM fts WHERE fts MATCH ?`, pq.match(false)).Scan(&n)
	return n, err
}

// MatchForTest counts the documents q's FTS5 expression matches, AND or
// OR, as Search would run it.
func (ix *Index) MatchForTest(q Query, or bool) (int64, error) {
	var n int64
	err := ix.db.QueryRowContext(context.Background(), `SELECT count(*) FROM fts WHERE fts MATCH ?`, q.match(or)).Scan(&n)
	return n, err
}

// RunForTest runs a statement and reads every row it returns (a PRAGMA's
// answer), for timing checks.
func (ix *Index) RunForTest(q string) ([]string, error) {
	rows, err := ix.db.QueryContext(context.Background(), q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s any
		if err := rows.Scan(&s); err != nil {
			return out, err
		}
		out = append(out, fmt.Sprint(s))
	}
	return out, rows.Err()
}
