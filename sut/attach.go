package sut

import (
	"context"
	"fmt"
)

// Attach opens a queue that another process installed in the database at dsn, so that a
// process of its own (a worker of a deployment run) runs the queue's statements exactly as
// the installing process's sessions do. Nothing is created: the statements are prepared and
// checked against the contract, and the connection that checked them is closed again. Ids
// and tokens the suite keeps for the queue (opaque ids, claim tokens, generations it counts)
// are this process's own, so only a queue whose ids and generations are its own columns is
// judged the same across processes (see OwnIdentity).
func Attach(ctx context.Context, dsn string, q *Queue) (*Installed, error) {
	admin, err := connect(ctx, dsn, "pgqcheck-attach")
	if err != nil {
		return nil, err
	}
	in := &Installed{Queue: q, DSN: dsn, admin: admin, ids: newRegistry(), be: q.open(q)}
	if err := in.be.ready(ctx, in); err != nil {
		admin.Close(context.Background())
		return nil, err
	}
	return in, nil
}

// OwnIdentity says why a queue's jobs cannot be named the same way by several processes ("" when
// they can): its ids are numbers and its generations (and claim tokens, if any) come back from
// its own statements, not from what one process kept.
func (q *Queue) OwnIdentity() string {
	switch {
	case q.open == nil || q.Claim == "":
		return fmt.Sprintf("%s is a queue written in Go, not a folder of SQL", q.Source)
	case q.OpaqueIDs:
		return fmt.Sprintf("%s declares opaque ids, which each process would number in its own order", q.Source)
	case q.Shape().NoGeneration:
		return fmt.Sprintf("%s declares no generation counter, which each process would count on its own", q.Source)
	}
	return ""
}
