package plan

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
	"github.com/pgqcheck/pgqcheck/sut/pgserver"
)

func TestMain(m *testing.M) { os.Exit(pgserver.Main(m)) }

func openLab(t *testing.T, q *sut.Queue) *Lab {
	t.Helper()
	in := suttest.Install(t, q)
	l, err := Open(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// digest fingerprints every row of every table the queue has, xmin included: a claim that
// was rolled back leaves no trace in it, one that was not changes at least the claimed row.
func digest(t *testing.T, l *Lab) string {
	t.Helper()
	ctx := context.Background()
	tables, err := l.strings(ctx, userTablesSQL)
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, tb := range tables {
		var d string
		q := "SELECT md5(coalesce(string_agg(t.xmin::text || ':' || t::text, '|' ORDER BY t::text), '')) FROM " + tb + " t"
		if err := l.in.Admin().QueryRow(ctx, q).Scan(&d); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, tb+"="+d)
	}
	return strings.Join(parts, " ")
}

func snapshot(t *testing.T, l *Lab) []model.Row {
	t.Helper()
	s, err := l.in.Connect(context.Background(), "reader", sut.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, _, err := s.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestExplainRollsBack: EXPLAIN ANALYZE executes the claim; the transaction around it must
// undo it, leave no lock and no open transaction behind.
func TestExplainRollsBack(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"seed", "split"} {
		t.Run(name, func(t *testing.T) {
			l := openLab(t, sut.MustBuiltin(name))
			if err := l.Fill(ctx, State{DoneRows: 50, ReadyRows: 3, ExpiredRows: 2, RunningRows: 2}); err != nil {
				t.Fatal(err)
			}
			before, snapBefore := digest(t, l), snapshot(t, l)
			for range 3 {
				c, err := l.Explain(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if c.Rows != 1 {
					t.Fatalf("the claim under EXPLAIN returned %d rows, want 1: it must really run for the test to mean anything", c.Rows)
				}
			}
			if after := digest(t, l); after != before {
				t.Errorf("rows changed across EXPLAIN ANALYZE:\nbefore %s\nafter  %s", before, after)
			}
			if snapAfter := snapshot(t, l); !slices.Equal(snapAfter, snapBefore) {
				t.Errorf("snapshot changed across EXPLAIN ANALYZE:\nbefore %v\nafter  %v", snapBefore, snapAfter)
			}
			var state string
			var locks int
			err := l.in.Admin().QueryRow(ctx, `SELECT a.state, (SELECT count(*) FROM pg_locks k WHERE k.pid = a.pid)
				FROM pg_stat_activity a WHERE a.pid = $1`, int32(l.s.PID)).Scan(&state, &locks)
			if err != nil {
				t.Fatal(err)
			}
			if state != "idle" || locks != 0 {
				t.Errorf("after EXPLAIN the lab's session is %q holding %d locks, want idle holding none", state, locks)
			}
		})
	}
}

// TestFillMatchesContract reads the filled states back through the queue's own snapshot.sql
// and claim.sql: the copies must be what the contract says they are.
func TestFillMatchesContract(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"seed", "split"} {
		t.Run(name, func(t *testing.T) {
			l := openLab(t, sut.MustBuiltin(name))
			w, err := l.in.Connect(ctx, "worker", sut.SessionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			// Growing (appends), keeping the size (new tail), shrinking (starts over).
			for _, st := range []State{
				{DoneRows: 30, ReadyRows: 4, ExpiredRows: 3, RunningRows: 2},
				{DoneRows: 60, ReadyRows: 1},
				{DoneRows: 60, ExpiredRows: 2},
				{DoneRows: 10, ReadyRows: 2, RunningRows: 1},
				{DoneRows: 5, RunningRows: 3},
			} {
				if err := l.Fill(ctx, st); err != nil {
					t.Fatal(err)
				}
				rows := snapshot(t, l)
				checkRows(t, st, rows)
				if err := w.Begin(ctx); err != nil {
					t.Fatal(err)
				}
				id, _, ok, _, err := w.Claim(ctx, claimLease)
				if err != nil {
					t.Fatal(err)
				}
				_ = w.Rollback(ctx)
				if want := st.eligible() > 0; ok != want {
					t.Fatalf("%+v: the queue's claim returned a job: %v, want %v", st, ok, want)
				}
				if ok {
					eligible := rows[st.DoneRows : st.DoneRows+st.ExpiredRows]
					eligible = append(slices.Clone(eligible), rows[len(rows)-st.ReadyRows:]...)
					if !slices.ContainsFunc(eligible, func(r model.Row) bool { return r.ID == id }) {
						t.Fatalf("%+v: the queue's claim took job %d, not an eligible one", st, id)
					}
					if l.in.Queue.Order == model.LowestID && id != eligible[0].ID {
						t.Fatalf("%+v: a lowest-id claim took job %d, want %d", st, id, eligible[0].ID)
					}
				}
			}
		})
	}
}

// checkRows: done jobs first (lowest ids), then expired, running and ready ones.
func checkRows(t *testing.T, st State, rows []model.Row) {
	t.Helper()
	var want []model.Row
	add := func(n int, s model.State, gen int64, live bool) {
		for range n {
			want = append(want, model.Row{State: s, Generation: gen, LeaseLive: live})
		}
	}
	add(st.DoneRows, model.Done, 1, false)
	add(st.ExpiredRows, model.Running, 1, false)
	add(st.RunningRows, model.Running, 1, true)
	add(st.ReadyRows, model.Ready, 0, false)
	if len(rows) != len(want) {
		t.Fatalf("%+v: snapshot has %d jobs, want %d", st, len(rows), len(want))
	}
	for i, r := range rows {
		w := want[i]
		live := r.LeaseLive && r.State == model.Running
		if r.State != w.State || r.Generation != w.Generation || live != w.LeaseLive {
			t.Fatalf("%+v: job %d (position %d) is %s gen %d live %v, want %s gen %d live %v",
				st, r.ID, i, r.State, r.Generation, live, w.State, w.Generation, w.LeaseLive)
		}
		if i > 0 && r.ID <= rows[i-1].ID {
			t.Fatalf("snapshot ids not ascending at position %d", i)
		}
	}
}

// TestClaimCostGrowth is property 10 at a size plain go test can afford: the seed's combined
// predicate walks the done rows, so its buffers grow with them; the split claim reaches ready
// and expired jobs through the partial indexes, so its buffers do not. Buffers, not time.
func TestClaimCostGrowth(t *testing.T) {
	ctx := context.Background()
	want := map[string]bool{"seed": true, "subquery": true, "split": false}
	var reports []*Report
	for _, name := range []string{"seed", "subquery", "split"} {
		in := suttest.Install(t, sut.MustBuiltin(name))
		r, err := MeasureWith(ctx, in, Options{Sizes: []int{2_000, 20_000}, Repeats: 3})
		if err != nil {
			t.Fatal(err)
		}
		reports = append(reports, r)
		if !r.Measurable {
			t.Fatalf("%s: %s", name, r.NotMeasurable)
		}
		if r.Grows != want[name] {
			t.Errorf("%s: grows = %v, want %v: %s", name, r.Grows, want[name], r.Verdict)
		}
		if len(r.Rows) != 4 {
			t.Errorf("%s: %d rows, want 2 sizes and 2 extra states", name, len(r.Rows))
		}
		for _, row := range r.Rows {
			if row.Note != "" {
				t.Errorf("%s, %s: %s", name, row.Name, row.Note)
			}
			if row.Buffers <= 0 || row.PlanShape == "" || !strings.HasPrefix(row.PlanShape, "Update ") {
				t.Errorf("%s, %s: buffers %d, plan %q", name, row.Name, row.Buffers, row.PlanShape)
			}
		}
	}
	split := reports[2]
	for _, row := range split.Rows {
		if !slices.Contains(row.UsesIndexes, "jobs_ready") {
			t.Errorf("split, %s: indexes %v, want jobs_ready among them", row.Name, row.UsesIndexes)
		}
		if row.RowsFiltered > int64(row.RunningRows) {
			t.Errorf("split, %s: %d rows filtered; only the live running rows may be", row.Name, row.RowsFiltered)
		}
	}
	t.Log("\n" + Table(reports...))
}

// writeQueue writes a built-in queue to a folder, with some files replaced.
func writeQueue(t *testing.T, name string, edits map[string]string) *sut.Queue {
	t.Helper()
	q := sut.MustBuiltin(name)
	dir := filepath.Join(t.TempDir(), name+"-variant")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		sut.FileSchema: q.Schema, sut.FileEnqueue: q.Enqueue, sut.FileClaim: q.Claim,
		sut.FileComplete: q.Complete, sut.FileExpire: q.Expire, sut.FileSnapshot: q.Snapshot,
		sut.FileLock: q.Lock, sut.FileConfig: `{"claim_order": "` + string(q.Order) + `"}`,
		sut.FileFail: q.Fail, sut.FileRenew: q.Renew, sut.FileEffect: q.Effect, sut.FileEffects: q.Effects, sut.FileReset: q.Reset,
	}
	for f, text := range edits {
		files[f] = text
	}
	for f, text := range files {
		if text == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := sut.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestNotMeasurable: a table shape the fill does not understand is reported, not guessed at.
func TestNotMeasurable(t *testing.T) {
	ctx := context.Background()
	seedSchema := sut.MustBuiltin("seed").Schema
	for _, c := range []struct {
		name  string
		edits map[string]string
		want  string
	}{
		{"ids without default", map[string]string{
			sut.FileSchema:  strings.Replace(seedSchema, "GENERATED ALWAYS AS IDENTITY ", "", 1),
			sut.FileEnqueue: "INSERT INTO jobs(id, payload) SELECT coalesce(max(id), 0) + 1, $1 FROM jobs RETURNING id",
		}, "no table holds exactly the four jobs"},
		{"a second table written", map[string]string{
			sut.FileSchema:  seedSchema + "\nCREATE TABLE job_log (job_id bigint NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());",
			sut.FileEnqueue: "WITH j AS (INSERT INTO jobs(payload) VALUES ($1) RETURNING id), l AS (INSERT INTO job_log(job_id) SELECT id FROM j) SELECT id FROM j",
		}, "also wrote job_log besides jobs"},
		{"claim takes nothing", map[string]string{
			sut.FileClaim: "SELECT id, generation FROM jobs WHERE false AND $1::interval IS NOT NULL",
		}, "claim: no job returned"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := suttest.Install(t, writeQueue(t, "seed", c.edits))
			r, err := Measure(ctx, in, []int{10, 20})
			if err != nil {
				t.Fatal(err)
			}
			if r.Measurable || !strings.Contains(r.NotMeasurable, c.want) {
				t.Fatalf("measurable %v, reason %q; want not measurable because %q", r.Measurable, r.NotMeasurable, c.want)
			}
			if s := r.Summary(); !strings.Contains(s, "not measurable") {
				t.Errorf("summary does not say why:\n%s", s)
			}
		})
	}
}

// TestIDColumnTellsRowsApart: a queue whose jobs all carry the same priority, from a column
// default that happens to equal one of the ids, is measured: the id column is the one whose
// values tell the four jobs apart, not any integer column whose values lie among the ids.
func TestIDColumnTellsRowsApart(t *testing.T) {
	seed := sut.MustBuiltin("seed")
	q := writeQueue(t, "seed", map[string]string{
		sut.FileSchema: strings.Replace(seed.Schema, "payload jsonb NOT NULL", "priority int NOT NULL DEFAULT 1,\n  payload jsonb NOT NULL", 1),
		sut.FileClaim:  strings.Replace(seed.Claim, "ORDER BY id", "ORDER BY priority, id", 1),
	})
	r, err := Measure(context.Background(), suttest.Install(t, q), []int{10, 20})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Measurable {
		t.Fatalf("not measurable: %s", r.NotMeasurable)
	}
}

// EnvPlanSizes asks TestClaimCostReport for a full report at the given done-row counts
// (comma-separated, e.g. 10000,100000,1000000). Without it the test is skipped: a million
// rows per queue is no part of a plain go test.
const EnvPlanSizes = "PGQCHECK_PLAN_SIZES"

// TestClaimCostReport logs the report for every queue under judgement (the built-ins, or
// PGQCHECK_SQL_DIR alone). It reports; the growth verdict is asserted only on the built-ins,
// by TestClaimCostGrowth.
func TestClaimCostReport(t *testing.T) {
	env := os.Getenv(EnvPlanSizes)
	if env == "" {
		t.Skip("set " + EnvPlanSizes + "=10000,100000,1000000 for the full report")
	}
	var sizes []int
	for _, f := range strings.Split(env, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			t.Fatalf("%s=%q: want comma-separated row counts", EnvPlanSizes, env)
		}
		sizes = append(sizes, n)
	}
	var reports []*Report
	for _, q := range suttest.Queues(t) {
		r, err := Measure(context.Background(), suttest.Install(t, q), sizes)
		if err != nil {
			t.Fatal(err)
		}
		reports = append(reports, r)
	}
	t.Log("\n" + Table(reports...))
}

// TestStateKeptByTheReset: a table that reset.sql fills after every reset (a retry policy) is
// the queue's state, not a table the contract's statements write: the lifecycle queue, whose
// policy lives so, is measured, and the same queue whose enqueue also writes the policy table
// is not.
func TestStateKeptByTheReset(t *testing.T) {
	lc := sut.MustBuiltin("lifecycle")
	r, err := Measure(context.Background(), suttest.Install(t, lc), []int{10, 20})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Measurable {
		t.Fatalf("not measurable: %s", r.NotMeasurable)
	}
	q := writeQueue(t, "lifecycle", map[string]string{
		sut.FileEnqueue: "WITH p AS (INSERT INTO retry_policy VALUES (3, interval '1 second', 1)) " + lc.Enqueue,
	})
	r, err = Measure(context.Background(), suttest.Install(t, q), []int{10, 20})
	if err != nil {
		t.Fatal(err)
	}
	if r.Measurable || !strings.Contains(r.NotMeasurable, "also wrote retry_policy besides jobs") {
		t.Fatalf("measurable %v (%q): an enqueue that writes the policy table was taken for one that does not", r.Measurable, r.NotMeasurable)
	}
}
