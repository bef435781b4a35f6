package plan

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// The split claim as PostgreSQL 15 explains it with a ready job present: the expired path is
// planned but never started.
const splitExplain = `[{"Plan": {"Node Type": "ModifyTable", "Operation": "Update", "Relation Name": "jobs", "Alias": "j",
 "Actual Rows": 1, "Actual Loops": 1, "Shared Hit Blocks": 17, "Shared Read Blocks": 2,
 "Plans": [
  {"Node Type": "Limit", "Parent Relationship": "InitPlan", "Subplan Name": "CTE ready", "Actual Rows": 1, "Actual Loops": 1,
   "Plans": [{"Node Type": "LockRows", "Actual Rows": 1, "Actual Loops": 1,
     "Plans": [{"Node Type": "Index Scan", "Index Name": "jobs_ready", "Relation Name": "jobs", "Alias": "jobs", "Actual Rows": 1, "Actual Loops": 1, "Rows Removed by Filter": 0}]}]},
  {"Node Type": "Limit", "Parent Relationship": "InitPlan", "Subplan Name": "CTE expired", "Actual Rows": 0, "Actual Loops": 0,
   "Plans": [{"Node Type": "LockRows", "Actual Rows": 0, "Actual Loops": 0,
     "Plans": [{"Node Type": "Index Scan", "Index Name": "jobs_expired", "Relation Name": "jobs", "Alias": "jobs_1", "Actual Rows": 0, "Actual Loops": 0}]}]},
  {"Node Type": "Nested Loop", "Actual Rows": 1, "Actual Loops": 1,
   "Plans": [
    {"Node Type": "Subquery Scan", "Alias": "candidate", "Actual Rows": 1, "Actual Loops": 1,
     "Plans": [{"Node Type": "Limit", "Actual Rows": 1, "Actual Loops": 1,
       "Plans": [{"Node Type": "Append", "Actual Rows": 1, "Actual Loops": 1,
         "Plans": [{"Node Type": "CTE Scan", "CTE Name": "ready", "Alias": "ready", "Actual Rows": 1, "Actual Loops": 1},
                   {"Node Type": "CTE Scan", "CTE Name": "expired", "Alias": "expired", "Actual Rows": 0, "Actual Loops": 0}]}]}]},
    {"Node Type": "Index Scan", "Index Name": "jobs_pkey", "Relation Name": "jobs", "Alias": "j", "Actual Rows": 1, "Actual Loops": 1}]}]},
 "Planning Time": 0.319, "Triggers": [], "Execution Time": 0.148}]`

// The seed's claim as PostgreSQL 15 explains it over a million done rows.
const seedExplain = `[{"Plan": {"Node Type": "ModifyTable", "Operation": "Update", "Relation Name": "jobs", "Alias": "j",
 "Actual Rows": 1, "Actual Loops": 1, "Shared Hit Blocks": 14121, "Shared Read Blocks": 0,
 "Plans": [
  {"Node Type": "Limit", "Parent Relationship": "InitPlan", "Subplan Name": "CTE candidate", "Actual Rows": 1, "Actual Loops": 1,
   "Plans": [{"Node Type": "LockRows", "Actual Rows": 1, "Actual Loops": 1,
     "Plans": [{"Node Type": "Index Scan", "Index Name": "jobs_pkey", "Relation Name": "jobs", "Alias": "jobs", "Actual Rows": 1, "Actual Loops": 1, "Rows Removed by Filter": 1000000}]}]},
  {"Node Type": "Nested Loop", "Actual Rows": 1, "Actual Loops": 1,
   "Plans": [{"Node Type": "CTE Scan", "CTE Name": "candidate", "Alias": "candidate", "Actual Rows": 1, "Actual Loops": 1},
             {"Node Type": "Index Scan", "Index Name": "jobs_pkey", "Relation Name": "jobs", "Alias": "j", "Actual Rows": 1, "Actual Loops": 1}]}]},
 "Planning Time": 2.9, "Execution Time": 624.4}]`

// InitPlan names carry their output parameters, which vary; averages are per loop.
const subqueryExplain = `[{"Plan": {"Node Type": "ModifyTable", "Operation": "Update", "Relation Name": "jobs",
 "Actual Rows": 0, "Actual Loops": 1, "Shared Hit Blocks": 5, "Shared Read Blocks": 1,
 "Plans": [
  {"Node Type": "Limit", "Parent Relationship": "InitPlan", "Subplan Name": "InitPlan 1 (returns $2)", "Actual Rows": 0, "Actual Loops": 1,
   "Plans": [{"Node Type": "Seq Scan", "Relation Name": "jobs", "Actual Rows": 0, "Actual Loops": 2, "Rows Removed by Filter": 7.5}]},
  {"Node Type": "Index Scan", "Index Name": "jobs_pkey", "Relation Name": "jobs", "Actual Rows": 0, "Actual Loops": 1}]},
 "Execution Time": 0.05}]`

func TestParseExplain(t *testing.T) {
	for _, c := range []struct {
		name, in              string
		buffers, rows, filter int64
		ms                    float64
		shape                 string
		indexes               []string
	}{
		{"split", splitExplain, 19, 1, 0, 0.148,
			"Update jobs > [CTE ready: Limit > LockRows > Index Scan jobs_ready | CTE expired: Limit (not run) > LockRows > Index Scan jobs_expired | " +
				"Nested Loop > [Subquery Scan candidate > Limit > Append > [CTE Scan ready | CTE Scan expired (not run)] | Index Scan jobs_pkey]]",
			[]string{"jobs_pkey", "jobs_ready"}},
		{"seed", seedExplain, 14121, 1, 1000000, 624.4,
			"Update jobs > [CTE candidate: Limit > LockRows > Index Scan jobs_pkey | Nested Loop > [CTE Scan candidate | Index Scan jobs_pkey]]",
			[]string{"jobs_pkey"}},
		{"subquery", subqueryExplain, 6, 0, 15, 0.05,
			"Update jobs > [InitPlan 1: Limit > Seq Scan jobs | Index Scan jobs_pkey]",
			[]string{"jobs_pkey"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseExplain([]byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if got.Buffers != c.buffers || got.Rows != c.rows || got.RowsFiltered != c.filter || got.ExecMs != c.ms {
				t.Errorf("buffers %d rows %d filtered %d ms %g, want %d %d %d %g", got.Buffers, got.Rows, got.RowsFiltered, got.ExecMs, c.buffers, c.rows, c.filter, c.ms)
			}
			if got.Shape != c.shape {
				t.Errorf("shape\n got %s\nwant %s", got.Shape, c.shape)
			}
			if !slices.Equal(got.Indexes, c.indexes) {
				t.Errorf("indexes %v, want %v", got.Indexes, c.indexes)
			}
		})
	}
	if _, err := ParseExplain([]byte(`{"Plan": {}}`)); err == nil {
		t.Error("an object instead of a list of plans was accepted")
	}
}

func TestJudge(t *testing.T) {
	series := func(done ...int) func(buffers ...int64) *Report {
		return func(buffers ...int64) *Report {
			r := &Report{K: DefaultK}
			for i, d := range done {
				r.Rows = append(r.Rows, Row{State: State{DoneRows: d}, Series: true, Buffers: buffers[i]})
			}
			r.Rows = append(r.Rows, Row{State: State{Name: "idle", DoneRows: done[len(done)-1]}, Buffers: 1e6})
			r.judge()
			return r
		}
	}
	for _, c := range []struct {
		name string
		r    *Report
		want bool
	}{
		{"flat", series(10_000, 100_000, 1_000_000)(22, 22, 23), false},
		{"linear", series(10_000, 100_000, 1_000_000)(160, 1_420, 14_121), true},
		{"linear over close sizes", series(100_000, 150_000)(1_420, 2_100), true},
		{"a few buffers over close sizes", series(2_000, 3_000)(20, 24), false},
		{"one size", series(10_000)(100), false},
	} {
		if c.r.Grows != c.want {
			t.Errorf("%s: grows %v, want %v (%s)", c.name, c.r.Grows, c.want, c.r.Verdict)
		}
	}
	b, err := json.Marshal(series(1, 2)(3, 4))
	if err != nil || !strings.Contains(string(b), `"done_rows":2`) || !strings.Contains(string(b), `"grows":false`) {
		t.Errorf("JSON %s, %v", b, err)
	}
}
