package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// StateBucket is the KV bucket of the holder's small files that a new
// holder needs after a failover: schedules.json, the email channel's
// cursor and spool. No TTL, one revision a key, as many replicas as the
// log stream.
const StateBucket = "FRONTDESK_STATE"

// GetState returns the value of key in StateBucket and its revision; a
// key never put is (nil, 0, nil). It asks the bucket's stream leader,
// which has every acknowledged put; when no leader answers within
// leaderWait (one is being elected), it reads any replica (direct get),
// which may not have applied the last put yet.
func (n *Node) GetState(ctx context.Context, key string) ([]byte, uint64, error) {
	v, rev, err := n.leaderGet(ctx, key)
	if err == nil || ctx.Err() != nil {
		return v, rev, err
	}
	n.log.Warn("cluster: the state bucket's leader did not answer; reading a replica", "key", key, "err", err)
	e, err := n.state.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("cluster: get state %s: %w", key, err)
	}
	return e.Value(), e.Revision(), nil
}

// leaderWait bounds GetState's question to the stream leader.
const leaderWait = time.Second

// leaderGet reads key's last message through the stream leader's
// message API (not the direct get a KeyValue uses, which any replica
// answers).
func (n *Node) leaderGet(ctx context.Context, key string) ([]byte, uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, leaderWait)
	defer cancel()
	req, _ := json.Marshal(map[string]string{"last_by_subj": "$KV." + StateBucket + "." + key})
	m, err := n.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET.KV_"+StateBucket, req)
	if err != nil {
		return nil, 0, err
	}
	var resp struct {
		Error *struct {
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
		Message *struct {
			Seq  uint64 `json:"seq"`
			Hdrs []byte `json:"hdrs"`
			Data []byte `json:"data"`
		} `json:"message"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		return nil, 0, err
	}
	switch {
	case resp.Error != nil && resp.Error.ErrCode == int(jetstream.JSErrCodeMessageNotFound):
		return nil, 0, nil
	case resp.Error != nil:
		return nil, 0, fmt.Errorf("%s (%d)", resp.Error.Description, resp.Error.ErrCode)
	case resp.Message == nil:
		return nil, 0, errors.New("an answer without a message")
	}
	if len(resp.Message.Hdrs) > 0 {
		if h, err := nats.DecodeHeadersMsg(resp.Message.Hdrs); err == nil && h.Get("KV-Operation") != "" {
			return nil, 0, nil // deleted or purged
		}
	}
	return resp.Message.Data, resp.Message.Seq, nil
}

// PutState stores value under key if the key's revision is still rev (0:
// the key must not exist yet) and returns the new revision. A key changed
// by someone else meanwhile is refused with ErrFenced and nothing is
// written: the writer is not the holder any more, or another holder wrote
// after it read.
func (n *Node) PutState(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	var (
		nrev uint64
		err  error
	)
	if rev == 0 {
		nrev, err = n.state.Create(ctx, key, value)
	} else {
		nrev, err = n.state.Update(ctx, key, value, rev)
	}
	switch {
	case errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		return 0, fmt.Errorf("cluster: put state %s at revision %d: %w", key, rev, ErrFenced)
	case err != nil:
		return 0, fmt.Errorf("cluster: put state %s: %w", key, err)
	}
	return nrev, nil
}

// WatchState calls fn, on WatchState's goroutine, each time key is put
// from now on, by any node, until ctx ends (it returns nil then). The
// watch is an ordered consumer that re-creates itself when the server it
// lived on goes; an error is returned when it cannot be made at all, or
// when it ends otherwise.
func (n *Node) WatchState(ctx context.Context, key string, fn func()) error {
	w, err := n.state.Watch(ctx, key, jetstream.UpdatesOnly(), jetstream.MetaOnly())
	if err != nil {
		return fmt.Errorf("cluster: watch state %s: %w", key, err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			switch {
			case !ok && ctx.Err() == nil:
				return fmt.Errorf("cluster: watch state %s: the watch ended", key)
			case !ok:
				return nil
			case e != nil:
				fn()
			}
		}
	}
}

func (n *Node) bindState(ctx context.Context) (err error) {
	n.state, err = n.bucket(ctx, jetstream.KeyValueConfig{Bucket: StateBucket,
		Description: "frontdesk holder state: schedules, email cursor", MaxValueSize: MaxEventBytes})
	return err
}
