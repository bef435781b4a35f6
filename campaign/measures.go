package campaign

import (
	"fmt"

	"pgqcheck/internal/textfmt"
	"pgqcheck/linear"
	"pgqcheck/timeline"
)

// MeasuresPage draws a saved history's measures page at htmlOut (no Postgres needed): what
// `pgqcheck check-history FILE -measures OUT.html` writes. An unreadable history is an
// *InputError.
func MeasuresPage(path, htmlOut string) (*timeline.Measures, error) {
	h, err := linear.Load(path)
	if err != nil {
		return nil, &InputError{fmt.Sprintf("%s is not a history (%s); pass a history.json from a report folder", path, textfmt.OneLine(err.Error()))}
	}
	return linear.WriteMeasures(h, htmlOut)
}
