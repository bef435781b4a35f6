// Package river051 registers River v0.51.2, the newest release the module proxy serves.
package river051

import (
	"context"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"

	"github.com/pgqcheck/pgqcheck/adapters/riverq"
)

// Name is the queue's registered name.
var Name = riverq.Register("v0.51.2", fetch)

// fetch: the executor's JobGetAvailable returns the jobs with their decode errors, each of
// which River's producer fails rather than works; an adapter inserting only its own args has
// none.
func fetch(ctx context.Context, exec riverdriver.Executor, p *riverdriver.JobGetAvailableParams) ([]*rivertype.JobRow, error) {
	res, err := exec.JobGetAvailable(ctx, p)
	if err != nil {
		return nil, err
	}
	return res.Jobs, nil
}
