package e2e

import (
	"archive/tar"
	"io"
	"testing"

	"github.com/frontdesk-hq/frontdesk/internal/testkit/testio"
)

// lockedBuffer is a buffer several goroutines may write.
type lockedBuffer = testio.Buffer

// walkArchive calls fn with each entry of a backup archive, in order, and
// a reader of its content.
func walkArchive(t *testing.T, path string, fn func(*tar.Header, io.Reader)) {
	testio.WalkArchive(t, path, fn)
}
