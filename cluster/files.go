package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
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
	return n.PutNamedFile(ctx, sha, "", r)
}

// PutNamedFile is PutFile that also records name (the name the file was
// uploaded under) for GetNamedFile; the first name stored stays.
func (n *Node) PutNamedFile(ctx context.Context, sha, name string, r io.Reader) error {
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
	meta := jetstream.ObjectMeta{Name: sha}
	if name != "" {
		meta.Metadata = map[string]string{fileNameKey: name}
	}
	if _, err := n.files.Put(ctx, meta, rs); err != nil {
		return fmt.Errorf("cluster: put file %s: %w", sha, err)
	}
	return nil
}

// GetFile writes the file named sha to w. It returns an error wrapping
// ErrNoFile when there is none; since reads may be served by a replica a
// moment behind, a file not found is looked for again for up to a second
// (a file just put on another node is found). An error also comes if the
// content read does not hash to sha (w has had it written then).
//
// A read whose content does not match (ErrBadRead: seen under load, a
// chunk the object store's consumer delivered again) is tried again, up
// to three times in all; w gets the content once, when it is whole.
func (n *Node) GetFile(ctx context.Context, sha string, w io.Writer) error {
	var err error
	for range badReadTries {
		var buf bytes.Buffer
		if err = n.getFileOnce(ctx, sha, &buf); err == nil {
			_, err = buf.WriteTo(w)
			return err
		}
		if !errors.Is(err, ErrBadRead) {
			return err
		}
	}
	return err
}

// badReadTries bounds the reads of a file whose content came back wrong.
const badReadTries = 3

func (n *Node) getFileOnce(ctx context.Context, sha string, w io.Writer) error {
	rc, _, err := n.OpenFile(ctx, sha)
	if err != nil {
		return err
	}
	defer func() { _ = rc.Close() }()
	if _, err := io.Copy(w, rc); err != nil {
		return fmt.Errorf("cluster: get file %s: %w", sha, err)
	}
	return nil
}

// fileNameKey is the object metadata key of a file's name.
const fileNameKey = "name"

// OpenFile opens the file named sha for reading and returns the name
// PutNamedFile recorded ("" if none); the caller closes it. Its errors are
// GetFile's; the reader's last Read (instead of io.EOF) fails if the
// content read does not hash to sha.
func (n *Node) OpenFile(ctx context.Context, sha string) (io.ReadCloser, string, error) {
	if !validSHA(sha) {
		return nil, "", fmt.Errorf("cluster: get file: %q is not a sha256", sha)
	}
	res, err := n.files.Get(ctx, sha)
	for until := time.Now().Add(time.Second); errors.Is(err, jetstream.ErrObjectNotFound) && time.Now().Before(until); {
		wait(ctx, 100*time.Millisecond)
		res, err = n.files.Get(ctx, sha)
	}
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil, "", fmt.Errorf("cluster: get file %s: %w", sha, ErrNoFile)
	}
	if err != nil {
		return nil, "", fmt.Errorf("cluster: get file %s: %w", sha, err)
	}
	var name string
	if info, err := res.Info(); err == nil {
		name = info.Metadata[fileNameKey]
	}
	return &checkedFile{r: res, sha: sha, h: sha256.New()}, name, nil
}

// checkedFile reads an object and checks its sha256 at the end.
type checkedFile struct {
	r   jetstream.ObjectResult
	sha string
	h   hash.Hash
}

func (c *checkedFile) Read(p []byte) (int, error) {
	m, err := c.r.Read(p)
	c.h.Write(p[:m])
	if err == io.EOF {
		if got := hex.EncodeToString(c.h.Sum(nil)); got != c.sha {
			return m, fmt.Errorf("cluster: get file %s: the content's sha256 is %s: %w", c.sha, got, ErrBadRead)
		}
	}
	if errors.Is(err, jetstream.ErrDigestMismatch) {
		err = fmt.Errorf("cluster: get file %s: %w: %w", c.sha, ErrBadRead, err)
	}
	return m, err
}

func (c *checkedFile) Close() error { return c.r.Close() }

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
