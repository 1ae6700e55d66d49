package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// PutFile stores the content read from r in the object store under its
// sha256 (64 lower-case hex digits), unless a file by that name is already
// there (content-addressed: it is the same file). The content must hash to
// sha; it is checked before anything is stored, reading r twice when it is
// an io.ReadSeeker (an attachment file) and through a temporary file
// otherwise, so a mislabelled file is refused and never seen by readers.
func (n *Node) PutFile(ctx context.Context, sha string, r io.Reader) error {
	if !validSHA(sha) {
		return fmt.Errorf("cluster: put file: %q is not a sha256", sha)
	}
	if _, err := n.files.GetInfo(ctx, sha); err == nil {
		return nil
	} else if !errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("cluster: put file %s: %w", sha, err)
	}
	rs, ok := r.(io.ReadSeeker)
	if !ok {
		f, err := os.CreateTemp("", "frontdesk-put-*")
		if err != nil {
			return fmt.Errorf("cluster: put file %s: %w", sha, err)
		}
		defer func() { _ = f.Close(); _ = os.Remove(f.Name()) }()
		if _, err := io.Copy(f, r); err != nil {
			return fmt.Errorf("cluster: put file %s: %w", sha, err)
		}
		rs = f
	}
	start, err := rs.Seek(0, io.SeekCurrent)
	if err != nil {
		return fmt.Errorf("cluster: put file %s: %w", sha, err)
	}
	if !ok {
		start = 0 // our temp file: from its start
	}
	h := sha256.New()
	if _, err := rs.Seek(start, io.SeekStart); err != nil {
		return fmt.Errorf("cluster: put file %s: %w", sha, err)
	}
	if _, err := io.Copy(h, rs); err != nil {
		return fmt.Errorf("cluster: put file %s: %w", sha, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sha {
		return fmt.Errorf("cluster: put file %s: the content's sha256 is %s; nothing stored", sha, got)
	}
	if _, err := rs.Seek(start, io.SeekStart); err != nil {
		return fmt.Errorf("cluster: put file %s: %w", sha, err)
	}
	if _, err := n.files.Put(ctx, jetstream.ObjectMeta{Name: sha}, rs); err != nil {
		return fmt.Errorf("cluster: put file %s: %w", sha, err)
	}
	return nil
}

// GetFile writes the file named sha to w. It returns an error wrapping
// ErrNoFile when there is none; since reads may be served by a replica a
// moment behind, a file not found is looked for again for up to a second
// (a file just put on another node is found). An error also comes if the
// content read does not hash to sha (w has had it written then).
func (n *Node) GetFile(ctx context.Context, sha string, w io.Writer) error {
	if !validSHA(sha) {
		return fmt.Errorf("cluster: get file: %q is not a sha256", sha)
	}
	res, err := n.files.Get(ctx, sha)
	for until := time.Now().Add(time.Second); errors.Is(err, jetstream.ErrObjectNotFound) && time.Now().Before(until); {
		wait(ctx, 100*time.Millisecond)
		res, err = n.files.Get(ctx, sha)
	}
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("cluster: get file %s: %w", sha, ErrNoFile)
	}
	if err != nil {
		return fmt.Errorf("cluster: get file %s: %w", sha, err)
	}
	defer func() { _ = res.Close() }()
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(w, h), res); err != nil {
		return fmt.Errorf("cluster: get file %s: %w", sha, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sha {
		return fmt.Errorf("cluster: get file %s: the content's sha256 is %s", sha, got)
	}
	return nil
}

func validSHA(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
