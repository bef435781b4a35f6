// Package river047 registers River v0.47.0, the last release before River PR 1373 guarded the
// rescuer's update with the running state and the rescue horizon (CHANGELOG 0.48.0).
package river047

import (
	"context"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"

	"github.com/pgqcheck/pgqcheck/adapters/riverq"
)

// Name is the queue's registered name.
var Name = riverq.Register("v0.47.0", fetch)

// fetch: in v0.47.0 the executor's JobGetAvailable returns the jobs themselves.
func fetch(ctx context.Context, exec riverdriver.Executor, p *riverdriver.JobGetAvailableParams) ([]*rivertype.JobRow, error) {
	return exec.JobGetAvailable(ctx, p)
}
