package clusterhub

import "context"

// LastSeq returns the log stream's last seq, asked of its leader: a
// follower's hub asks it for a client that says it has seen more than
// this node has (hub.Cluster).
func (l Link) LastSeq(ctx context.Context) (int64, error) { return l.Node.LastSeq(ctx) }
