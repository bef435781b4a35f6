package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/campaign"
	"github.com/pgqcheck/pgqcheck/internal/suttest"
)

// The command's own tests: flags, exit statuses, one-line errors, and one end-to-end run. What
// a campaign finds and saves is tested in package campaign.

type result struct {
	code           int
	stdout, stderr string
}

// pgqcheck runs one command line in-process, as main would.
func pgqcheck(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := mainWith(args, &out, &errb)
	return result{code, out.String(), errb.String()}
}

// oneLineError checks the error contract: exit 2, stderr one line starting "pgqcheck: ".
func oneLineError(t *testing.T, r result, want string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
	if r.code != exitError || len(lines) != 1 || !strings.HasPrefix(lines[0], "pgqcheck: ") || !strings.Contains(lines[0], want) {
		t.Errorf("want exit 2 and one line containing %q; got exit %d, stderr:\n%s", want, r.code, r.stderr)
	}
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, []byte("not an operation\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  string // PGQCHECK_SQL_DIR
		args []string
		want string
	}{
		{"no command", "", nil, "no command given"},
		{"unknown command", "", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown flag", "", []string{"run", "--frob"}, "flag provided but not defined: -frob"},
		{"zero duration", "", []string{"run", "--duration", "0"}, "--duration must be positive"},
		{"negative duration", "", []string{"run", "--duration", "-5s"}, "--duration must be positive"},
		{"bad duration", "", []string{"run", "--duration", "soon"}, "invalid value"},
		{"zero workers", "", []string{"run", "--workers", "0"}, "--workers must be at least 1"},
		{"missing sql dir", "", []string{"run", "--sql-dir", filepath.Join(dir, "nope")}, "--sql-dir"},
		{"sql dir is a file", "", []string{"run", "--sql-dir", file}, "is a file"},
		{"missing PGQCHECK_SQL_DIR", filepath.Join(dir, "nope"), []string{"run"}, "PGQCHECK_SQL_DIR"},
		{"incomplete sql dir", "", []string{"run", "--sql-dir", dir}, "schema.sql: missing"},
		{"two queues", "", []string{"run", "--sql-dir", dir, "--queue", "split"}, "both name a queue"},
		{"unknown queue", "", []string{"run", "--queue", "nope"}, `no queue "nope"; use one of seed`},
		{"unwritable report", "", []string{"run", "--duration", "1s", "--report", filepath.Join(file, "reports")}, "--report"},
		{"unwritable corpus", "", []string{"run", "--duration", "1s", "--report", filepath.Join(dir, "reports"), "--corpus", file}, "--corpus"},
		{"unknown mode", "", []string{"run", "--mode", "bogus"}, `unknown mode "bogus"`},
		{"bad plan sizes", "", []string{"run", "--plan-sizes", "many"}, "--plan-sizes"},
		{"unwritable evidence", "", []string{"walkthrough", "-o", filepath.Join(file, "e.json")}, "cannot be written"},
		{"walkthrough stray arg", "", []string{"walkthrough", "x.json"}, "unexpected argument"},
		{"missing mutants dir", "", []string{"mutants", "--dir", filepath.Join(dir, "nope")}, "--dir"},
		{"bad mutants pattern", "", []string{"mutants", "--run", "("}, "not a regular expression"},
		{"zero budget", "", []string{"mutants", "--budget", "0s"}, "--budget must be positive"},
		{"no report file", "", []string{"report"}, "no report given"},
		{"unreadable report", "", []string{"report", filepath.Join(dir, "nope.json")}, "cannot be read"},
		{"not a report", "", []string{"report", file}, "not a pgqcheck report"},
		{"replay nothing", "", []string{"replay"}, "pass exactly one saved case"},
		{"replay unreadable", "", []string{"replay", filepath.Join(dir, "nope.ops")}, "cannot be read"},
		{"replay not a program", "", []string{"replay", file}, "is not an .ops program"},
		{"check-history not a history", "", []string{"check-history", file}, "is not a history"},
		{"measures of not a history", "", []string{"check-history", file, "-measures", filepath.Join(dir, "m.html")}, "is not a history"},
		{"measures into a folder", "", []string{"check-history", file, "-measures", dir}, "-measures " + dir + " is a folder"},
		{"unreachable DSN", "", []string{"walkthrough", "-o", filepath.Join(dir, "e.json")}, "PGQCHECK_DSN"},
		{"crash in another mode", "", []string{"run", "--crash", "--mode", "sequential"}, "--crash runs stress rounds only (got --mode sequential)"},
		{"crash with two workers", "", []string{"run", "--crash", "--mode", "stress", "--workers", "2"}, "--crash needs --workers 1"},
		{"crash on a dsn server", "", []string{"run", "--crash", "--mode", "stress", "--duration", "1s", "--report", filepath.Join(dir, "reports")}, "PGQCHECK_PG=dsn names one this suite does not own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PGQCHECK_SQL_DIR", tc.env)
			if tc.name == "unreachable DSN" || tc.name == "crash on a dsn server" {
				t.Setenv("PGQCHECK_PG", "dsn")
				t.Setenv("PGQCHECK_DSN", "host="+dir+" port=1 user=nobody")
			}
			r := pgqcheck(t, tc.args...)
			if tc.name == "no command" {
				// The command list goes first, then the one-line error.
				lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
				r.stderr = lines[len(lines)-1]
			}
			oneLineError(t, r, tc.want)
		})
	}
}

func TestHelp(t *testing.T) {
	for _, cmd := range commands {
		r := pgqcheck(t, cmd.name, "-h")
		if r.code != exitHeld || !strings.Contains(r.stdout, "Usage: pgqcheck "+cmd.name) || r.stderr != "" {
			t.Errorf("%s -h: exit %d, stdout:\n%s\nstderr:\n%s", cmd.name, r.code, r.stdout, r.stderr)
		}
	}
	if r := pgqcheck(t, "-h"); r.code != exitHeld || !strings.Contains(r.stdout, "replay") {
		t.Errorf("-h: exit %d, stdout:\n%s", r.code, r.stdout)
	}
}

// TestCheckHistoryMeasures draws a saved stress history's measures page: the measures are
// printed, the page is written and holds the measures table and a shaded fault window for each
// of the history's faults, and the verdict still decides the exit status.
func TestCheckHistoryMeasures(t *testing.T) {
	page := filepath.Join(t.TempDir(), "m.html")
	r := pgqcheck(t, "check-history", suttest.ModuleDir(t, "testdata/histories/seed-stress.json"), "-measures", page)
	if r.code != exitHeld || !strings.Contains(r.stdout, "claim latency p50") || !strings.Contains(r.stdout, "measures: "+page) || !strings.Contains(r.stdout, "ok: every job's history") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	// seed-stress.json records 3 faults; each is shaded in the three charts.
	if n := bytes.Count(b, []byte(`<rect class="fault"`)); !bytes.Contains(b, []byte(`id="measures-table"`)) || n != 9 {
		t.Errorf("the page has %d fault rectangles (want 9) or no measures table", n)
	}
}

// TestReplayExitCodes replays a program that catches a mutant: it breaks fencing on that
// mutant (exit 1), and holds on the seed (exit 0), whatever queue its header names.
func TestReplayExitCodes(t *testing.T) {
	t.Setenv("PGQCHECK_SQL_DIR", "")
	prog := suttest.ModuleDir(t, "testdata/programs/mutants/complete-ignores-generation.ops")
	r := pgqcheck(t, "replay", prog, "--sql-dir", suttest.ModuleDir(t, "testdata/mutants/complete-ignores-generation"))
	if r.code != exitViolation || !strings.Contains(r.stdout, "property 1 (fencing)") || !strings.Contains(r.stdout, "program (queue's answers):") {
		t.Errorf("on the mutant: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A scheduled program replays its interleaving on concurrent sessions: the seed's stale
	// completion in five lines breaks fencing on the mutant and holds on the seed.
	sched := filepath.Join(t.TempDir(), "scheduled.ops")
	if err := os.WriteFile(sched, []byte("# mode: scheduled\ns0 enqueue 1\ns1 claim\ns0 expire newest claim\ns0 claim\ns1 complete newest\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = pgqcheck(t, "replay", sched, "--sql-dir", suttest.ModuleDir(t, "testdata/mutants/complete-ignores-generation"))
	if r.code != exitViolation || !strings.Contains(r.stdout, "property 1 (fencing)") || !strings.Contains(r.stdout, "s1 complete newest -> job 1 gen 1: 1 row") {
		t.Errorf("the scheduled program on the mutant: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = pgqcheck(t, "replay", sched); r.code != exitHeld || !strings.Contains(r.stdout, "s1 complete newest -> job 1 gen 1: 0 rows") {
		t.Errorf("the scheduled program on the seed: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = pgqcheck(t, "replay", prog)
	if r.code != exitHeld || !strings.Contains(r.stdout, "held: no property broken") || !strings.Contains(r.stdout, "built-in seed") {
		t.Errorf("on the seed: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestRunSmoke is the one end-to-end run: a short campaign on the seed holds, writes its report
// and summary, and the report command reads and merges it.
func TestRunSmoke(t *testing.T) {
	t.Setenv("PGQCHECK_SQL_DIR", "")
	var rep, file string
	var report campaign.Report
	// A loaded machine can end four seconds before a concurrent round has been checked: then the
	// run is made again, twice as long, up to three times.
	for try, d := 1, 4*time.Second; ; try, d = try+1, 2*d {
		rep = t.TempDir()
		r := pgqcheck(t, "run", "--duration", d.String(), "--workers", "1", "--seed", "7", "--report", rep, "--corpus", t.TempDir(), "--plan-sizes", "")
		if r.code != exitHeld || !strings.Contains(r.stdout, "verdict: every checked property held") || !strings.Contains(r.stdout, "run: queue built-in seed") {
			t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		if report, file = readReport(t, rep); report.Histories > 0 || try == 3 {
			break
		}
		t.Logf("%v checked no concurrent history; again for %v", d, 2*d)
	}
	if report.Verdict != campaign.VerdictHeld || report.Seed != 7 || report.Checks == 0 || report.Histories == 0 || report.Backend == "" {
		t.Errorf("report: %+v", report)
	}
	if r := pgqcheck(t, "report", file); r.code != exitHeld || !strings.Contains(r.stdout, "verdict: every checked property held") {
		t.Errorf("report: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	merged := filepath.Join(t.TempDir(), "merged.json")
	if r := pgqcheck(t, "report", "-merge", merged, file, file); r.code != exitHeld || !strings.Contains(r.stdout, "merged from 2 shard reports") {
		t.Errorf("report -merge: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// readReport reads the one report a run wrote into dir.
func readReport(t *testing.T, dir string) (campaign.Report, string) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "run-*.json"))
	if len(files) != 1 {
		t.Fatalf("want one report in %s, found %v", dir, files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var report campaign.Report
	if err := json.Unmarshal(b, &report); err != nil {
		t.Fatal(err)
	}
	return report, files[0]
}

// TestRunCrash runs a crash campaign end to end: one stress round at least, with the server
// killed and restarted in it, and the report counting it.
func TestRunCrash(t *testing.T) {
	t.Setenv("PGQCHECK_SQL_DIR", "")
	if pg := os.Getenv("PGQCHECK_PG"); pg == "dsn" || (pg == "" || pg == "auto") && os.Getenv("PGQCHECK_DSN") != "" {
		t.Skip("PGQCHECK_PG=dsn: the suite cannot kill -9 and restart a server it does not own; run it with PGQCHECK_PG=local or docker")
	}
	rep, corpus := t.TempDir(), t.TempDir()
	r := pgqcheck(t, "run", "--mode", "stress", "--crash", "--duration", "1s", "--seed", "7", "--report", rep, "--corpus", corpus, "--plan-sizes", "")
	if r.code != exitHeld || !strings.Contains(r.stdout, "server crashes: ") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	report, _ := readReport(t, rep)
	if report.Crashes == nil || report.Crashes.Rounds < 1 || report.Crashes.Rounds != report.Histories || report.Crashes.LongestDownS <= 0 {
		t.Errorf("report: %d histories, crashes %+v; want one crash round per history", report.Histories, report.Crashes)
	}
}
