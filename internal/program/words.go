package program

import (
	"fmt"
	"strings"
	"time"
)

// Worded is an operation whose answer a trace shows as one phrase rather than as its
// statements' answers joined; "" keeps the joined answers.
type Worded interface {
	Words(w *World, answers []string, a Answers) string
}

func (Enqueue) Words(_ *World, answers []string, _ Answers) string {
	ids := make([]string, 0, len(answers))
	for _, a := range answers {
		ids = append(ids, strings.TrimPrefix(a, "id "))
	}
	return "ids " + strings.Join(ids, " ")
}

func (o Pause) Words(w *World, _ []string, _ Answers) string {
	if id, ok := o.Job(w); ok {
		return fmt.Sprintf("job %d's lease expired", id)
	}
	return ""
}

func (Drain) Words(_ *World, _ []string, a Answers) string {
	return fmt.Sprintf("%d completed", a.Completions)
}

func (Near) Words(_ *World, _ []string, a Answers) string {
	return fmt.Sprintf("slept %v", a.Slept.Round(time.Millisecond))
}
