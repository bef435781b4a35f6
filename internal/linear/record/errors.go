package record

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgqcheck/pgqcheck/internal/pgerr"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// outcomeOf decides what a failed statement did. Only a request that provably never reached
// the server is "not sent"; anything else may have taken effect, whatever the error says.
func outcomeOf(err error) model.Outcome {
	if pgconn.SafeToRetry(err) {
		return model.NotSent
	}
	return model.Unknown
}

// ErrorText is an error as a history keeps it: the server's message and code, or the
// client's one-line error.
func ErrorText(err error) string {
	var se *sut.StatementError
	if errors.As(err, &se) {
		return se.Error()
	}
	return err.Error()
}

// injected reports whether an error is one the harness causes on purpose: a cancelled
// statement, a terminated backend, a lost connection.
func injected(err error) bool {
	code := pgerr.Code(err)
	switch {
	case code == "":
		return true // not a server error: the connection went away
	case code == "57014", code == "57P01", code == "57P02", code == "57P03":
		return true
	case len(code) == 5 && code[:2] == "08":
		return true
	}
	return false
}

// unexpected turns an error the harness did not cause into the property it breaks: a queue
// statement on a correct queue never fails (property 9), and a claim never returns two rows.
func unexpected(kind string, err error) *model.Violation {
	var multi *sut.ErrMultipleRows
	if errors.As(err, &multi) {
		return multi.Violation()
	}
	if injected(err) {
		return nil
	}
	var se *sut.StatementError
	if errors.As(err, &se) {
		return model.Violate(model.PNoErrors, "%s failed with SQLSTATE %s: %s", se.File, se.SQLState, se.Msg)
	}
	return model.Violate(model.PNoErrors, "%s failed: %s", kind, ErrorText(err))
}
