// Package river048 registers River v0.48.0, the first release whose rescuer updates a stuck job
// only while it is still running and older than the rescue horizon (River PR 1373, CHANGELOG
// 0.48.0).
package river048

import (
	"context"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"

	"github.com/pgqcheck/pgqcheck/adapters/riverq"
)

// Name is the queue's registered name.
var Name = riverq.Register("v0.48.0", fetch)

// fetch: from v0.48.0 the executor's JobGetAvailable returns the jobs with their decode errors; an
// adapter inserting only its own args has none.
func fetch(ctx context.Context, exec riverdriver.Executor, p *riverdriver.JobGetAvailableParams) ([]*rivertype.JobRow, error) {
	res, err := exec.JobGetAvailable(ctx, p)
	if err != nil {
		return nil, err
	}
	return res.Jobs, nil
}
