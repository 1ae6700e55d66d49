package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/nats-io/nats.go/jetstream"
)

// PutFile stores the content read from r in the object store under its
// sha256 (64 lower-case hex digits), unless a file by that name is already
// there (content-addressed: it is the same file). The content must hash to
// sha; if it does not, the stored copy is deleted again and PutFile
// returns an error.
func (n *Node) PutFile(ctx context.Context, sha string, r io.Reader) error {
	if !validSHA(sha) {
		return fmt.Errorf("cluster: put file: %q is not a sha256", sha)
	}
	if _, err := n.files.GetInfo(ctx, sha); err == nil {
		_, _ = io.Copy(io.Discard, r)
		return nil
	} else if !errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("cluster: put file %s: %w", sha, err)
	}
	h := sha256.New()
	if _, err := n.files.Put(ctx, jetstream.ObjectMeta{Name: sha}, io.TeeReader(r, h)); err != nil {
		return fmt.Errorf("cluster: put file %s: %w", sha, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sha {
		if err := n.files.Delete(ctx, sha); err != nil {
			n.log.Warn("cluster: delete a mislabelled file", "sha256", sha, "err", err)
		}
		return fmt.Errorf("cluster: put file %s: the content's sha256 is %s", sha, got)
	}
	return nil
}

// GetFile writes the file named sha to w. It returns an error wrapping
// ErrNoFile when there is none, and an error if the content read does not
// hash to sha (w has had it written then).
func (n *Node) GetFile(ctx context.Context, sha string, w io.Writer) error {
	if !validSHA(sha) {
		return fmt.Errorf("cluster: get file: %q is not a sha256", sha)
	}
	res, err := n.files.Get(ctx, sha)
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
