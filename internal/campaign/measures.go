package campaign

import (
	"fmt"

	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/internal/linear/report"
	"github.com/pgqcheck/pgqcheck/internal/textfmt"
	"github.com/pgqcheck/pgqcheck/internal/timeline"
)

// MeasuresPage draws a saved history's measures page at htmlOut (no Postgres needed): what
// `pgqcheck check-history FILE -measures OUT.html` writes. An unreadable history is an
// *InputError.
func MeasuresPage(path, htmlOut string) (*timeline.Measures, error) {
	h, err := history.Load(path)
	if err != nil {
		return nil, &InputError{fmt.Sprintf("%s is not a history (%s); pass a history.json from a report folder", path, textfmt.OneLine(err.Error()))}
	}
	return report.WriteMeasures(h, htmlOut)
}
