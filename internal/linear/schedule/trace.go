package schedule

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pgqcheck/pgqcheck/internal/pgerr"
	"github.com/pgqcheck/pgqcheck/internal/program"
	"github.com/pgqcheck/pgqcheck/sut"
)

// traceText is an operation as the trace shows it: as it prints, with the session's life when
// it has been reconnected ("s1/2 claim"). A pause prints without a session: it stops every one.
func (r *scheduledRun) traceText(sess *scheduledSession, op program.Op) string {
	if rest, ok := strings.CutPrefix(op.String(), sess.state.Name+" "); ok {
		return sess.state.Label() + " " + rest
	}
	return op.String()
}

// listing is the interleaving with the queue's answers.
func (r *scheduledRun) listing() string {
	var b strings.Builder
	for i, l := range r.trace {
		fmt.Fprintf(&b, "%4d. %s\n", i+1, l)
	}
	return b.String()
}

// answerText is a statement's answer as the trace shows it.
func answerText(st program.Stmt, res program.Result, waited bool) string {
	answer := st.Answer(res)
	switch {
	case errors.Is(res.Err, sut.ErrRolledBack):
		answer = "rolled back"
	case res.Err != nil && pgerr.Code(res.Err) != "":
		answer = "error SQLSTATE " + pgerr.Code(res.Err)
	case res.Err != nil:
		answer = "connection lost"
	case answer == "":
		answer = "ok"
	}
	if waited {
		answer += " (after waiting)"
	}
	return answer
}

// traceAnswer writes a returned statement's answer on its trace line.
func (r *scheduledRun) traceAnswer(sess *scheduledSession, answer string) {
	line := strings.Replace(r.trace[sess.traceIndex], " [waits for a lock]", "", 1)
	if strings.Contains(line, " -> ") {
		line += "; " + answer
	} else {
		line += " -> " + answer
	}
	r.trace[sess.traceIndex] = line
}
