package index

import "context"

// ForceSchemaVersionForTest makes the index look written by another
// version.
func (ix *Index) ForceSchemaVersionForTest(v int) error {
	_, err := ix.db.ExecContext(context.Background(), `UPDATE meta SET value = ? WHERE key = 'schema_version'`, v)
	return err
}
