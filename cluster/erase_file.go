package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// filesStream is the stream behind the object store of attachments.
const filesStream = "OBJ_" + FilesBucket

// EraseFile removes the attachment sha from the cluster's object store so
// that its bytes leave every node's store: each chunk is securely deleted
// (overwritten, as Forget does for the log), then the object is deleted,
// and this node's replica of the store's stream is snapshotted so its
// Raft log drops the chunks too. A file the store does not hold is no
// error (another node erased it first).
func (n *Node) EraseFile(ctx context.Context, sha string) error {
	if !validSHA(sha) {
		return fmt.Errorf("cluster: erase file: %q is not a sha256", sha)
	}
	s, err := n.js.Stream(ctx, filesStream)
	if err != nil {
		return fmt.Errorf("cluster: erase file %s: %w", sha, err)
	}
	// Whoever deleted the chunks, this node's replica drops them from its
	// Raft log only when it snapshots, once it has stored the deletes.
	defer n.snapshotStored(ctx, s, filesStream)
	info, err := n.files.GetInfo(ctx, sha)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return nil
	} else if err != nil {
		return fmt.Errorf("cluster: erase file %s: %w", sha, err)
	}
	seqs, err := n.chunkSeqs(ctx, info)
	if err != nil {
		return fmt.Errorf("cluster: erase file %s: %w", sha, err)
	}
	for _, seq := range seqs {
		if err := s.SecureDeleteMsg(ctx, seq); err != nil && !gone(err) {
			return fmt.Errorf("cluster: erase file %s: chunk at seq %d: %w", sha, seq, err)
		}
	}
	if err := n.files.Delete(ctx, sha); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return fmt.Errorf("cluster: erase file %s: %w", sha, err)
	}
	return nil
}

// chunkSeqs returns the stream seqs of the chunks of the object info
// describes: an ordered consumer on its chunk subject, headers only.
func (n *Node) chunkSeqs(ctx context.Context, info *jetstream.ObjectInfo) ([]uint64, error) {
	if info.Chunks == 0 {
		return nil, nil
	}
	c, err := n.js.OrderedConsumer(ctx, filesStream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{"$O." + FilesBucket + ".C." + info.NUID},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		HeadersOnly:    true,
	})
	if err != nil {
		return nil, err
	}
	var seqs []uint64
	for len(seqs) < int(info.Chunks) {
		batch, err := c.Fetch(int(info.Chunks)-len(seqs), jetstream.FetchMaxWait(apiTimeout))
		if err != nil {
			return nil, err
		}
		got := 0
		for m := range batch.Messages() {
			md, err := m.Metadata()
			if err != nil {
				return nil, err
			}
			seqs = append(seqs, md.Sequence.Stream)
			got++
		}
		if err := batch.Error(); err != nil {
			return nil, err
		}
		if got == 0 {
			break // fewer chunks stored than the info says: delete those found
		}
	}
	return seqs, nil
}
