package sut

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgqcheck/pgqcheck/internal/textfmt"
	"github.com/pgqcheck/pgqcheck/model"
)

// folder is the backend of a queue given as a folder of SQL statements: each statement is sent
// between two clock readings in one pipeline (Session.timed), and its columns are decoded by what
// the queue declares (opaque ids, no generation counter) and by what its claim returns.
type folder struct {
	q           *Queue
	claimWorker bool // claim.sql takes the worker's name
	tokenCols   int  // columns claim.sql returns beyond id (and generation): the claim's token
	delays      bool // enqueue.sql takes a run-at delay
}

func openFolder(q *Queue) backend { return &folder{q: q} }

func (f *folder) schema() string { return f.q.Schema }

func (f *folder) install(ctx context.Context, c *pgx.Conn) error {
	return execSchema(ctx, c, f.schema())
}

// ready prepares every statement and compares parameters and result columns with the contract.
// The claim's columns decide how many token values complete.sql takes.
func (f *folder) ready(ctx context.Context, in *Installed) error {
	for _, s := range f.shapes() {
		sd, err := in.admin.Prepare(ctx, "", s.sql)
		if err != nil {
			return &ContractError{f.q.Source, s.file, "does not prepare: " + textfmt.ErrLine(err)}
		}
		if err := f.checkParams(s, sd.ParamOIDs); err != nil {
			return err
		}
		if s.cols == nil {
			continue
		}
		if err := f.checkCols(s, sd.Fields); err != nil {
			return err
		}
	}
	return nil
}

func (f *folder) reset() {} // the folder keeps nothing beside the database

func (f *folder) enqueue(ctx context.Context, s *Session, payload string, delay time.Duration) (int64, Clock, error) {
	args := []any{payload}
	if f.delays {
		args = append(args, delay)
	}
	r, clk, err := s.timed(ctx, FileEnqueue, f.q.Enqueue, args...)
	var id int64
	if err == nil {
		if len(r.rows) != 1 {
			err = fmt.Errorf("returned %d rows, want exactly one", len(r.rows))
		} else {
			id, err = f.jobID(s, r, 0, 0)
		}
	}
	return id, clk, stmtErr(FileEnqueue, err)
}

// jobID decodes the id in column col of a row: the id itself, or, for opaque ids, its number.
func (f *folder) jobID(s *Session, r result, row, col int) (int64, error) {
	if !f.q.OpaqueIDs {
		var id int64
		return id, s.scanCol(r, row, col, &id)
	}
	var text string
	if err := s.scanCol(r, row, col, &text); err != nil {
		return 0, err
	}
	return s.in.ids.job(text), nil
}

// idArg is the value a statement is handed for a job: its id, or its opaque id.
func (f *folder) idArg(s *Session, job int64) (any, error) {
	if !f.q.OpaqueIDs {
		return job, nil
	}
	return s.in.ids.text(job)
}

// claimArgs are claim.sql's parameters: the lease unless the queue fixes it, then the worker's
// name if claim.sql takes one.
func (f *folder) claimArgs(s *Session, lease time.Duration) []any {
	var args []any
	if f.q.FixedLease == 0 {
		args = append(args, leaseArg(f.q.Shape().Life, lease))
	}
	if f.claimWorker {
		args = append(args, s.Worker)
	}
	return args
}

func (f *folder) claim(ctx context.Context, s *Session, lease time.Duration) (id, gen int64, ok bool, clk Clock, err error) {
	r, clk, err := s.timed(ctx, FileClaim, f.q.Claim, f.claimArgs(s, lease)...)
	if err != nil {
		return 0, 0, false, clk, stmtErr(FileClaim, err)
	}
	got := make([][2]int64, len(r.rows))
	tokens := make([][]any, len(r.rows))
	for i := range r.rows {
		if got[i][0], err = f.jobID(s, r, i, 0); err != nil {
			return 0, 0, false, clk, stmtErr(FileClaim, err)
		}
		first := 1
		if f.q.Shape().NoGeneration {
			got[i][1] = s.in.ids.claimed(got[i][0])
		} else {
			first = 2
			if err := s.scanCol(r, i, 1, &got[i][1]); err != nil {
				return 0, 0, false, clk, stmtErr(FileClaim, err)
			}
		}
		for c := first; c < len(r.fields); c++ {
			var v any
			if err := s.scanCol(r, i, c, &v); err != nil {
				return 0, 0, false, clk, stmtErr(FileClaim, err)
			}
			tokens[i] = append(tokens[i], v)
		}
		s.in.ids.keep(got[i][0], got[i][1], tokens[i])
	}
	switch len(got) {
	case 0:
		return 0, 0, false, clk, nil
	case 1:
		return got[0][0], got[0][1], true, clk, nil
	}
	return 0, 0, false, clk, &ErrMultipleRows{got}
}

func (f *folder) complete(ctx context.Context, s *Session, id, gen int64) (int64, Clock, error) {
	return f.rowsChanged(ctx, s, FileComplete, f.q.Complete, id, gen)
}

// tokenArgs are what a statement presenting a claim is handed: the job's id, its generation
// (where the queue keeps one), then the claim's token columns.
func (f *folder) tokenArgs(s *Session, id, gen int64) ([]any, error) {
	arg, err := f.idArg(s, id)
	if err != nil {
		return nil, err
	}
	args := []any{arg}
	if !f.q.Shape().NoGeneration {
		args = append(args, gen)
	}
	return append(args, s.in.ids.token(id, gen, f.tokenCols)...), nil
}

// rowsChanged runs a statement that presents a claim's token, then more, and answers the rows
// it changed.
func (f *folder) rowsChanged(ctx context.Context, s *Session, file, sql string, id, gen int64, more ...any) (int64, Clock, error) {
	args, err := f.tokenArgs(s, id, gen)
	if err != nil {
		return 0, Clock{}, stmtErr(file, err)
	}
	r, clk, err := s.timed(ctx, file, sql, append(args, more...)...)
	var n int64
	if err == nil {
		err = s.one(r, &n)
	}
	return n, clk, stmtErr(file, err)
}

func (f *folder) expire(ctx context.Context, s *Session, id int64) (Clock, error) {
	arg, err := f.idArg(s, id)
	if err != nil {
		return Clock{}, stmtErr(FileExpire, err)
	}
	_, clk, err := s.timed(ctx, FileExpire, f.q.Expire, arg)
	return clk, stmtErr(FileExpire, err)
}

func (f *folder) rescue(ctx context.Context, s *Session) ([]int64, Clock, error) {
	if !f.q.Can().Rescue {
		return nil, Clock{}, lacks(f.q, FileRescue)
	}
	r, clk, err := s.timed(ctx, FileRescue, f.q.Rescue)
	if err != nil {
		return nil, clk, stmtErr(FileRescue, err)
	}
	ids := make([]int64, len(r.rows))
	for i := range r.rows {
		if ids[i], err = f.jobID(s, r, i, 0); err != nil {
			return nil, clk, stmtErr(FileRescue, err)
		}
	}
	return ids, clk, nil
}

func (f *folder) snapshot(ctx context.Context, s *Session) ([]model.Row, Clock, error) {
	r, clk, err := s.timed(ctx, FileSnapshot, f.q.Snapshot)
	if err != nil {
		return nil, clk, stmtErr(FileSnapshot, err)
	}
	out := make([]model.Row, len(r.rows))
	for i := range r.rows {
		var state string
		if out[i].ID, err = f.jobID(s, r, i, 0); err != nil {
			return nil, clk, stmtErr(FileSnapshot, err)
		}
		col := []any{&state, &out[i].Generation, &out[i].LeaseLive}
		if f.q.Shape().NoGeneration {
			col = []any{&state, &out[i].LeaseLive}
			out[i].Generation = s.in.ids.generation(out[i].ID)
		}
		var kept *string
		if f.q.Can().Fail {
			col = append(col, &out[i].Attempts, &kept)
		}
		for c, d := range col {
			if err := s.scanCol(r, i, 1+c, d); err != nil {
				return nil, clk, stmtErr(FileSnapshot, err)
			}
		}
		out[i].State = model.State(state)
		if kept != nil {
			out[i].Kept = *kept
		}
	}
	if f.q.OpaqueIDs {
		sortRows(out)
	}
	return out, clk, nil
}

func (f *folder) lock(ctx context.Context, s *Session, id int64) error {
	if !f.q.Can().Lock {
		return lacks(f.q, FileLock)
	}
	arg, err := f.idArg(s, id)
	if err != nil {
		return stmtErr(FileLock, err)
	}
	rows, err := s.conn.Query(ctx, f.q.Lock, arg)
	if err != nil {
		return stmtErr(FileLock, err)
	}
	rows.Close()
	return stmtErr(FileLock, rows.Err())
}

// Column kinds the contract speaks of.
type colKind int

const (
	anyCol colKind = iota
	intCol
	boolCol
	idCol    // an integer, or any type where ids are opaque
	tokenCol // the claim's token: any number of columns of any type, to the end
)

var (
	intOIDs  = map[uint32]bool{20: true, 21: true, 23: true, 1700: true}
	textOIDs = map[uint32]bool{25: true, 1043: true, 19: true} // text, varchar, name
)

// shape is one statement's parameters and columns as the queue's declaration makes them.
type shape struct {
	file   string
	sql    string
	params []string  // what the contract passes, by name; a name ending in "?" may be absent (claim's worker)
	cols   []colKind // nil: any result (or none)
	names  string    // how the contract names the columns, for messages
}

func (f *folder) shapes() []shape {
	q := f.q
	claimParams := []string{"worker name?"}
	if q.FixedLease == 0 {
		claimParams = []string{"lease length (interval)", "worker name?"}
	}
	claimCols, claimNames := []colKind{idCol, intCol, tokenCol}, "id, generation[, token...]"
	token := []string{"id", "generation", "token..."}
	snapCols, snapNames := []colKind{idCol, anyCol, intCol, boolCol}, "id, state, generation, lease_live"
	if q.Shape().NoGeneration {
		claimCols, claimNames = []colKind{idCol, tokenCol}, "id[, token...]"
		token = []string{"id", "token..."}
		snapCols, snapNames = []colKind{idCol, anyCol, boolCol}, "id, state, lease_live"
	}
	if q.Can().Fail {
		snapCols, snapNames = append(snapCols, intCol, anyCol), snapNames+", attempts, error"
	}
	s := []shape{
		{FileEnqueue, q.Enqueue, []string{"payload (jsonb)", "run-at delay?"}, []colKind{idCol}, "id"},
		{FileClaim, q.Claim, claimParams, claimCols, claimNames},
		{FileComplete, q.Complete, token, []colKind{intCol}, "rows completed"},
		{FileExpire, q.Expire, []string{"id"}, nil, ""},
		{FileSnapshot, q.Snapshot, nil, snapCols, snapNames},
	}
	if q.Can().Lock {
		s = append(s, shape{FileLock, q.Lock, []string{"id"}, nil, ""})
	}
	if q.Can().Rescue {
		s = append(s, shape{FileRescue, q.Rescue, nil, []colKind{idCol}, "id"})
	}
	return append(s, f.lifeShapes(token)...)
}

// lifeShapes are the lifecycle's statements, where the queue ships them.
func (f *folder) lifeShapes(token []string) []shape {
	q := f.q
	var s []shape
	if q.Can().Fail {
		s = append(s, shape{FileFail, q.Fail, append(append([]string(nil), token...), "retryable (boolean)", "error text"), []colKind{intCol}, "rows changed"})
	}
	switch {
	case q.Can().Heartbeat:
		s = append(s, shape{FileRenew, q.Renew, []string{"worker name (text)", "lease length"}, []colKind{idCol}, "id"})
	case q.Can().Renew:
		s = append(s, shape{FileRenew, q.Renew, append(append([]string(nil), token...), "lease length"), []colKind{intCol}, "rows changed"})
	}
	if q.Can().Effect {
		s = append(s, shape{FileEffect, q.Effect, []string{"id"}, nil, ""},
			shape{FileEffects, q.Effects, nil, []colKind{idCol, intCol}, "id, count"})
	}
	if q.Reset != "" {
		s = append(s, shape{FileReset, q.Reset, nil, nil, ""})
	}
	for _, x := range extras {
		if q.Extras[x.File] != "" {
			s = append(s, f.extraShape(x, token))
		}
	}
	return s
}

// Parameter types the contract speaks of.
const (
	boolOID     = 16
	intervalOID = 1186
)

func (f *folder) checkParams(s shape, oids []uint32) error {
	want := 0
	for _, p := range s.params {
		if !strings.HasSuffix(p, "?") && p != "token..." {
			want++
		}
	}
	if slices.Contains(s.params, "token...") {
		want += f.tokenCols
	}
	got := fmt.Sprint(len(oids))
	switch {
	case s.file == FileClaim && len(oids) == want+1 && textOIDs[oids[want]]:
		f.claimWorker = true
		return f.checkLease(s, oids)
	case s.file == FileClaim && len(oids) == want+1:
		got += fmt.Sprintf(" ($%d of type oid %d)", want+1, oids[want])
	case s.file == FileEnqueue && len(oids) == 2 && oids[1] == intervalOID:
		f.delays, f.q.Declared.Shape.Can.Delay = true, true
		return nil
	case s.file == FileEnqueue && len(oids) == 2:
		return &ContractError{f.q.Source, s.file, fmt.Sprintf("$2 has type oid %d; the contract passes $1 the payload (jsonb), then optionally the run-at delay (interval)", oids[1])}
	}
	if len(oids) == want {
		return f.checkLease(s, oids)
	}
	var passes string
	switch {
	case s.file == FileClaim:
		passes = "$1 lease length (interval), then optionally the worker's name (text)"
		if f.q.FixedLease != 0 {
			passes = "no lease (queue.json fixes it), optionally $1 the worker's name (text)"
		}
	case slices.Contains(s.params, "token..."):
		var named []string
		for _, p := range s.params {
			if p != "token..." {
				named = append(named, p)
			}
		}
		passes = fmt.Sprintf("%d: %s", want, strings.Join(named, ", "))
		if f.tokenCols > 0 {
			passes = fmt.Sprintf("%d: id, generation, then the %d token column(s) claim.sql returns", want, f.tokenCols)
			if rest := named[2:]; len(rest) > 0 {
				passes += ", then " + strings.Join(rest, ", ")
			}
		}
	default:
		passes = fmt.Sprintf("%d (%s)", want, contractLines[s.file])
	}
	return &ContractError{f.q.Source, s.file, fmt.Sprintf("takes %s parameters; the contract passes %s", got, passes)}
}

// checkLease checks the types of the parameters whose type the contract decides: a claim's or
// a renewal's lease (an interval, or whole seconds as an integer, the same in both), a
// failure's retryable flag and error text. A claim whose lease is an integer takes whole
// seconds.
func (f *folder) checkLease(s shape, oids []uint32) error {
	lc := &f.q.Declared.Shape.Life
	// Positions past the claim's token are named from the end of the parameters.
	bad := func(i int, want string) error {
		name := s.params[0]
		if i > 0 {
			name = s.params[len(s.params)-(len(oids)-i)]
		}
		return &ContractError{f.q.Source, s.file, fmt.Sprintf("$%d (%s) has type oid %d; the contract passes %s", i+1, name, oids[i], want)}
	}
	switch {
	case s.file == FileClaim && f.q.FixedLease == 0 && intOIDs[oids[0]]:
		lc.WholeSeconds = true
	case s.file == FileClaim && f.q.FixedLease == 0 && oids[0] != intervalOID:
		return bad(0, "the lease as an interval, or as whole seconds (an integer)")
	case s.file == FileFail && oids[len(oids)-2] != boolOID:
		return bad(len(oids)-2, "whether the failure may be retried, a boolean")
	case s.file == FileFail && !textOIDs[oids[len(oids)-1]]:
		return bad(len(oids)-1, "the error text")
	case s.file == FileRenew && lc.WholeSeconds && !intOIDs[oids[len(oids)-1]]:
		return bad(len(oids)-1, "the lease in whole seconds (an integer), as claim.sql takes it")
	case s.file == FileRenew && !lc.WholeSeconds && oids[len(oids)-1] != intervalOID:
		return bad(len(oids)-1, "the lease (an interval), as claim.sql takes it")
	case s.file == FileRenew && lc.WorkerLease && !textOIDs[oids[0]]:
		return bad(0, "the worker's name (text)")
	case s.file == FileRenew && lc.WorkerLease && !f.claimWorker:
		return &ContractError{f.q.Source, FileClaim, "takes no worker name; queue.json declares \"lease_owner\": \"worker\", so each claim must say whose lease it is ($2, text)"}
	}
	// An extra statement's parameters past the claim's token are typed by their names.
	for i := len(oids) - 1; i >= 0 && extraNamed(s.file) != nil; i-- {
		switch name := s.params[len(s.params)-(len(oids)-i)]; {
		case name == ParamDelay && oids[i] != intervalOID:
			return bad(i, "the delay (an interval)")
		case name == ParamKey && !textOIDs[oids[i]]:
			return bad(i, "the key (text)")
		case name != ParamDelay && name != ParamKey:
			return nil
		}
	}
	return nil
}

func (f *folder) checkCols(s shape, fields []pgconn.FieldDescription) error {
	fixed := len(s.cols)
	if s.cols[fixed-1] == tokenCol {
		fixed--
		f.tokenCols = len(fields) - fixed
	}
	if len(fields) < fixed || len(fields) > fixed && fixed == len(s.cols) {
		return &ContractError{f.q.Source, s.file, fmt.Sprintf("returns %d columns; the contract expects %d: %s", len(fields), fixed, s.names)}
	}
	for i, want := range s.cols[:fixed] {
		oid := fields[i].DataTypeOID
		if want == idCol && f.q.OpaqueIDs {
			continue
		}
		if want == idCol && !intOIDs[oid] {
			return &ContractError{f.q.Source, s.file, fmt.Sprintf("column %d (%s) has type oid %d; the contract expects an integer id (for uuid or text ids declare \"ids\": \"opaque\" in queue.json)", i+1, fields[i].Name, oid)}
		}
		if (want == intCol && !intOIDs[oid]) || (want == boolCol && oid != 16) {
			kind := map[colKind]string{intCol: "an integer", boolCol: "a boolean"}[want]
			return &ContractError{f.q.Source, s.file, fmt.Sprintf("column %d (%s) has type oid %d; the contract expects %s (columns: %s)", i+1, fields[i].Name, oid, kind, s.names)}
		}
	}
	return nil
}
