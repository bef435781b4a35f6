package sut

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"pgqcheck/internal/textfmt"
	"pgqcheck/model"
)

// folder is the backend of a queue given as a folder of SQL statements: each statement is sent
// between two clock readings in one pipeline (Session.timed), and its columns are decoded by what
// the queue declares (opaque ids, no generation counter) and by what its claim returns.
type folder struct {
	q           *Queue
	claimWorker bool // claim.sql takes the worker's name
	tokenCols   int  // columns claim.sql returns beyond id (and generation): the claim's token
}

func openFolder(q *Queue) backend { return &folder{q: q} }

func (f *folder) schema() string { return f.q.Schema }

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

func (f *folder) enqueue(ctx context.Context, s *Session, payload string) (int64, Clock, error) {
	r, clk, err := s.timed(ctx, FileEnqueue, f.q.Enqueue, payload)
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
		args = append(args, lease)
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
	arg, err := f.idArg(s, id)
	if err != nil {
		return 0, Clock{}, stmtErr(FileComplete, err)
	}
	args := []any{arg}
	if !f.q.Shape().NoGeneration {
		args = append(args, gen)
	}
	args = append(args, s.in.ids.token(id, gen, f.tokenCols)...)
	r, clk, err := s.timed(ctx, FileComplete, f.q.Complete, args...)
	var n int64
	if err == nil {
		err = s.one(r, &n)
	}
	return n, clk, stmtErr(FileComplete, err)
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
	if !f.q.CanRescue() {
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
		for c, d := range col {
			if err := s.scanCol(r, i, 1+c, d); err != nil {
				return nil, clk, stmtErr(FileSnapshot, err)
			}
		}
		out[i].State = model.State(state)
	}
	if f.q.OpaqueIDs {
		sortRows(out)
	}
	return out, clk, nil
}

func (f *folder) lock(ctx context.Context, s *Session, id int64) error {
	if !f.q.CanLock() {
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
	completeParams := []string{"id", "generation", "token..."}
	snapCols, snapNames := []colKind{idCol, anyCol, intCol, boolCol}, "id, state, generation, lease_live"
	if q.Shape().NoGeneration {
		claimCols, claimNames = []colKind{idCol, tokenCol}, "id[, token...]"
		completeParams = []string{"id", "token..."}
		snapCols, snapNames = []colKind{idCol, anyCol, boolCol}, "id, state, lease_live"
	}
	s := []shape{
		{FileEnqueue, q.Enqueue, []string{"payload (jsonb)"}, []colKind{idCol}, "id"},
		{FileClaim, q.Claim, claimParams, claimCols, claimNames},
		{FileComplete, q.Complete, completeParams, []colKind{intCol}, "rows completed"},
		{FileExpire, q.Expire, []string{"id"}, nil, ""},
		{FileSnapshot, q.Snapshot, nil, snapCols, snapNames},
	}
	if q.CanLock() {
		s = append(s, shape{FileLock, q.Lock, []string{"id"}, nil, ""})
	}
	if q.CanRescue() {
		s = append(s, shape{FileRescue, q.Rescue, nil, []colKind{idCol}, "id"})
	}
	return s
}

func (f *folder) checkParams(s shape, oids []uint32) error {
	want := 0
	for _, p := range s.params {
		if !strings.HasSuffix(p, "?") && p != "token..." {
			want++
		}
	}
	got := fmt.Sprint(len(oids))
	switch {
	case s.file == FileClaim && len(oids) == want+1 && textOIDs[oids[want]]:
		f.claimWorker = true
		return nil
	case s.file == FileClaim && len(oids) == want+1:
		got += fmt.Sprintf(" ($%d of type oid %d)", want+1, oids[want])
	case s.file == FileComplete:
		want += f.tokenCols
	}
	if len(oids) == want {
		return nil
	}
	var passes string
	switch s.file {
	case FileClaim:
		passes = "$1 lease length (interval), then optionally the worker's name (text)"
		if f.q.FixedLease != 0 {
			passes = "no lease (queue.json fixes it), optionally $1 the worker's name (text)"
		}
	case FileComplete:
		passes = fmt.Sprintf("%d: %s", want, strings.Join(s.params[:len(s.params)-1], ", "))
		if f.tokenCols > 0 {
			passes += fmt.Sprintf(", then the %d token column(s) claim.sql returns", f.tokenCols)
		}
	default:
		passes = fmt.Sprintf("%d (%s)", want, contractLine(s.file))
	}
	return &ContractError{f.q.Source, s.file, fmt.Sprintf("takes %s parameters; the contract passes %s", got, passes)}
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
