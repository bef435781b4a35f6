package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"pgqcheck/linear"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The tests run the built command as a user would: exit statuses, one-line errors and what is
// left behind are the contract.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pgqcheck-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	bin = filepath.Join(dir, "pgqcheck")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building pgqcheck: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

func pgqcheck(t *testing.T, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running pgqcheck %v: %v", args, err)
	}
	return r
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
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"no command", nil, nil, "no command given"},
		{"unknown command", nil, []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown flag", nil, []string{"run", "--frob"}, "flag provided but not defined: -frob"},
		{"zero duration", nil, []string{"run", "--duration", "0"}, "--duration must be positive"},
		{"negative duration", nil, []string{"run", "--duration", "-5s"}, "--duration must be positive"},
		{"bad duration", nil, []string{"run", "--duration", "soon"}, "invalid value"},
		{"zero workers", nil, []string{"run", "--workers", "0"}, "--workers must be at least 1"},
		{"missing sql dir", nil, []string{"run", "--sql-dir", filepath.Join(dir, "nope")}, "--sql-dir"},
		{"sql dir is a file", nil, []string{"run", "--sql-dir", file}, "is a file"},
		{"missing PGQCHECK_SQL_DIR", []string{"PGQCHECK_SQL_DIR=" + filepath.Join(dir, "nope")}, []string{"run"}, "PGQCHECK_SQL_DIR"},
		{"incomplete sql dir", nil, []string{"run", "--sql-dir", dir}, "schema.sql: missing"},
		{"unwritable report", nil, []string{"run", "--duration", "1s", "--report", filepath.Join(file, "reports")}, "--report"},
		{"unknown mode", nil, []string{"run", "--mode", "bogus"}, `unknown mode "bogus"`},
		{"unwritable evidence", nil, []string{"walkthrough", "-o", filepath.Join(file, "e.json")}, "cannot be written"},
		{"walkthrough stray arg", nil, []string{"walkthrough", "x.json"}, "unexpected argument"},
		{"missing mutants dir", nil, []string{"mutants", "--dir", filepath.Join(dir, "nope")}, "--dir"},
		{"zero budget", nil, []string{"mutants", "--budget", "0s"}, "--budget must be positive"},
		{"no report file", nil, []string{"report"}, "no report given"},
		{"unreadable report", nil, []string{"report", filepath.Join(dir, "nope.json")}, "cannot be read"},
		{"not a report", nil, []string{"report", file}, "not a pgqcheck report"},
		{"unreachable DSN", []string{"PGQCHECK_PG=dsn", "PGQCHECK_DSN=host=" + dir + " port=1 user=nobody"}, []string{"walkthrough", "-o", filepath.Join(dir, "e.json")}, "PGQCHECK_DSN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := pgqcheck(t, tc.env, tc.args...)
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
	for _, cmd := range []string{"walkthrough", "run", "mutants", "report"} {
		r := pgqcheck(t, nil, cmd, "-h")
		if r.code != 0 || !strings.Contains(r.stdout, "Usage: pgqcheck "+cmd) || r.stderr != "" {
			t.Errorf("%s -h: exit %d, stdout:\n%s\nstderr:\n%s", cmd, r.code, r.stdout, r.stderr)
		}
	}
	if r := pgqcheck(t, nil, "-h"); r.code != 0 || !strings.Contains(r.stdout, "Commands:") {
		t.Errorf("-h: exit %d, stdout:\n%s", r.code, r.stdout)
	}
}

func TestWalkthroughCommand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "evidence", "walkthrough.json")
	r := pgqcheck(t, nil, "walkthrough", "-o", path)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"backend=", "-> 2|1", "-> 1|1", "-> 1|2", "evidence: " + path} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	var ev struct {
		Passed    bool   `json:"passed"`
		Backend   string `json:"backend"`
		Version   string `json:"server_version"`
		Scenarios []struct {
			Steps []struct {
				SQL    string `json:"sql"`
				Output string `json:"output"`
			} `json:"steps"`
		} `json:"scenarios"`
	}
	readJSON(t, path, &ev)
	if !ev.Passed || ev.Backend == "" || ev.Version == "" || len(ev.Scenarios) != 3 || len(ev.Scenarios[0].Steps) < 10 {
		t.Errorf("evidence incomplete: %+v", ev)
	}
	noDatabasesLeft(t, "pgqcheck_walkthrough")
}

func TestMutantsCatchesOne(t *testing.T) {
	r := pgqcheck(t, nil, "mutants", "--run", "^complete-ignores-generation$", "--builtins=false", "--budget", "30s", "--shrink-time", "5s")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "complete-ignores-generation") || !strings.Contains(r.stdout, "caught") || !strings.Contains(r.stdout, "property 1 (fencing)") {
		t.Errorf("kill table does not show the mutant caught by fencing:\n%s", r.stdout)
	}
	noDatabasesLeft(t, "pgqcheck_mutants_")
}

func TestRunHoldsOnSeed(t *testing.T) {
	rep, corpus := t.TempDir(), t.TempDir()
	// The default mode takes turns: sequential, stress, scheduled rounds.
	r := pgqcheck(t, nil, "run", "--duration", "6s", "--workers", "2", "--seed", "7", "--report", rep, "--corpus", corpus, "--plan-sizes", "2000,20000")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	report := onlyReport(t, rep)
	if report.Verdict != verdictHeld || report.Checks == 0 || report.Histories == 0 || report.Counts.Claims == 0 || report.Seed != 7 || report.Workers != 2 ||
		report.Backend == "" || report.ServerVersion == "" || report.StopReason != "duration reached" {
		t.Errorf("report: %+v", report)
	}
	for _, p := range report.Properties {
		if (p.Number == 7 || p.Number == 1) && p.Status != statusHeld || p.Number == 10 && p.Status != statusGrows {
			t.Errorf("property %d %s: %s", p.Number, p.Name, p.Status)
		}
	}
	if !strings.Contains(r.stdout, "verdict: every checked property held") {
		t.Errorf("no summary on stdout:\n%s", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(corpus, "testdata", "rapid")); err == nil {
		t.Errorf("a passing run saved cases under %s", corpus)
	}
	noDatabasesLeft(t, "pgqcheck_run_")
}

// TestRunSavesReplayableFailure runs a campaign on a mutant with the module as corpus, and then
// the replay command the report prints: plain go test must fail on the saved case.
func TestRunSavesReplayableFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the root package's tests")
	}
	root, mutantDir, r, f := campaignOnMutantCopy(t, "sequential")
	wantDir := filepath.Join(root, "testdata", "rapid", "TestPropQueue_complete-ignores-generation")
	if f.Property != 1 || filepath.Dir(f.ReplayFile) != wantDir || !strings.Contains(f.ReplayCommand, "PGQCHECK_SQL_DIR="+mutantDir) {
		t.Fatalf("failure: property %d, file %s, command %s", f.Property, f.ReplayFile, f.ReplayCommand)
	}
	if !strings.Contains(r.stdout, "replay: "+f.ReplayCommand) {
		t.Errorf("summary does not print the replay command:\n%s", r.stdout)
	}
	replay := exec.Command("sh", "-c", f.ReplayCommand)
	replay.Env = os.Environ()
	out, err := replay.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "property 1 (fencing)") || !strings.Contains(string(out), filepath.Base(f.ReplayFile)) {
		t.Errorf("replaying with %q did not fail on the saved case (%v):\n%s", f.ReplayCommand, err, out)
	}
	if filepath.Dir(f.ProgramFile) != filepath.Join(root, "testdata", "programs", "found") || !strings.Contains(r.stdout, "replay:  "+f.ProgramCommand) {
		t.Fatalf("reduced program not saved or not printed: %s\n%s", f.ProgramFile, r.stdout)
	}
	replay = exec.Command("sh", "-c", f.ProgramCommand)
	replay.Env = os.Environ()
	out, err = replay.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "property 1 (fencing)") {
		t.Errorf("replaying the program with %q did not fail (%v):\n%s", f.ProgramCommand, err, out)
	}
}

// campaignOnMutantCopy runs a one-worker campaign in one mode on the complete-ignores-generation
// mutant, with a copy of the module as corpus (the real tree must not see a mutant's case appear
// while other packages' tests read the corpus), and returns its one failure.
func campaignOnMutantCopy(t *testing.T, mode string) (root, mutantDir string, r result, f *Failure) {
	t.Helper()
	src, ok := moduleRoot()
	if !ok {
		t.Fatal("not inside the pgqcheck module")
	}
	root = copyModule(t, src)
	mutantDir = filepath.Join(root, "testdata", "mutants", "complete-ignores-generation")
	rep := t.TempDir()
	// Shrinking is capped so the test stays short; the saved case is still a failing one.
	r = pgqcheck(t, nil, "run", "--mode", mode, "--duration", "1m", "--workers", "1", "--shrink-time", "3s", "--sql-dir", mutantDir, "--report", rep, "--corpus", root, "--plan-sizes", "")
	report := onlyReport(t, rep)
	if r.code != exitViolation || report.Verdict != verdictViolated || len(report.Failures) != 1 {
		t.Fatalf("exit %d, verdict %s, %d failures\n%s%s", r.code, report.Verdict, len(report.Failures), r.stdout, r.stderr)
	}
	return root, mutantDir, r, report.Failures[0]
}

// TestRunSavesScheduledFuzzInput: a scheduled-mode failure is also kept as a FuzzScheduled
// corpus entry, and the command the report prints replays it with plain go test.
func TestRunSavesScheduledFuzzInput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the fuzz package's tests")
	}
	root, _, r, f := campaignOnMutantCopy(t, "scheduled")
	// The summary shows the shrunk program with its interleaving, and where its timeline is.
	if !strings.Contains(r.stdout, "interleaving (the queue's answers):") || !strings.Contains(r.stdout, "report: "+f.ReportDir) {
		t.Errorf("the summary lacks the interleaving or the report folder %q:\n%s", f.ReportDir, r.stdout)
	}
	if _, err := os.Stat(filepath.Join(f.ReportDir, linear.ReportTimeline)); err != nil {
		t.Errorf("report folder: %v", err)
	}
	if filepath.Dir(f.FuzzFile) != filepath.Join(root, "fuzz", "testdata", "fuzz", "FuzzScheduled") || !strings.Contains(r.stdout, "replay:     "+f.FuzzCommand) {
		t.Fatalf("fuzz input not saved or not printed: %q\n%s", f.FuzzFile, r.stdout)
	}
	replay := exec.Command("sh", "-c", f.FuzzCommand)
	// The expected failure writes its report folder under the temporary directory: this test's.
	replay.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	out, err := replay.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "property 1 (fencing)") || !strings.Contains(string(out), filepath.Base(f.FuzzFile)) {
		t.Errorf("replaying with %q did not fail on the saved input (%v):\n%s", f.FuzzCommand, err, out)
	}
}

func TestRunInterruptWritesReport(t *testing.T) {
	rep, corpus := t.TempDir(), t.TempDir()
	cmd := exec.Command(bin, "run", "--duration", "5m", "--report", rep, "--corpus", corpus)
	cmd.Env = os.Environ()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sc := bufio.NewScanner(stdout)
	started := false
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "run: queue") {
			started = true
			break
		}
	}
	if !started {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the campaign never started:\n%s%s", out.String(), errb.String())
	}
	time.Sleep(1500 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		out.WriteString(sc.Text() + "\n")
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatalf("still running a minute after Ctrl-C:\n%s%s", out.String(), errb.String())
	}
	if err != nil {
		t.Fatalf("exit after Ctrl-C: %v\n%s%s", err, out.String(), errb.String())
	}
	report := onlyReport(t, rep)
	if !report.Interrupted || report.Checks == 0 || report.Verdict != verdictHeld {
		t.Errorf("report after Ctrl-C: interrupted %v, checks %d, verdict %s", report.Interrupted, report.Checks, report.Verdict)
	}
	noDatabasesLeft(t, "pgqcheck_run_")
}

func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, checks int64, failures []*Failure) string {
		r := &Report{Format: reportFormat, Tool: "pgqcheck run", Queue: QueueInfo{Name: "seed", Source: "built-in seed"}, Mode: "sequential",
			Workers: 1, Seed: 3, Checks: checks, Ops: 10 * checks, Backend: "dsn", ServerVersion: "15.18", Failures: failures}
		r.Counts.Claims = checks
		r.fillProperties(sequential{}.Properties())
		r.decideVerdict()
		p := filepath.Join(dir, name)
		if err := writeJSON(p, r); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := mk("a.json", 100, nil)
	b := mk("b.json", 50, nil)
	bad := &Failure{Verdict: "property 1 (fencing): complete(1, gen 1) changed 1 row", ReplayFile: "x.fail", ReplayCommand: "go test -run X ."}
	bad.classify()
	c := mk("c.json", 5, []*Failure{bad})

	if r := pgqcheck(t, nil, "report", a, b); r.code != 0 || strings.Count(r.stdout, "verdict: every checked property held") != 2 {
		t.Errorf("report a b: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := pgqcheck(t, nil, "report", c); r.code != exitViolation || !strings.Contains(r.stdout, "replay: go test -run X .") {
		t.Errorf("report c: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	out := filepath.Join(dir, "merged.json")
	r := pgqcheck(t, nil, "report", "-merge", out, a, b, c)
	if r.code != exitViolation {
		t.Errorf("merge: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var m Report
	readJSON(t, out, &m)
	if m.Checks != 155 || m.Workers != 3 || len(m.Failures) != 1 || m.Verdict != verdictViolated || len(m.Shards) != 3 || m.Counts.Claims != 155 {
		t.Errorf("merged: checks %d workers %d failures %d verdict %s shards %v", m.Checks, m.Workers, len(m.Failures), m.Verdict, m.Shards)
	}
	for _, p := range m.Properties {
		if p.Number == 1 && (p.Status != statusViolated || p.Failures != 1) {
			t.Errorf("merged fencing: %+v", p)
		}
	}
}

func TestRoundSeeds(t *testing.T) {
	seen := map[uint64]bool{}
	for w := 0; w < 4; w++ {
		for r := 0; r < 1000; r++ {
			s := roundSeed(42, w, r)
			if s == 0 || seen[s] {
				t.Fatalf("round seed %d (worker %d, round %d) is zero or repeats", s, w, r)
			}
			seen[s] = true
		}
	}
	if roundSeed(42, 1, 5) != roundSeed(42, 1, 5) {
		t.Fatal("round seeds are not reproducible")
	}
}

func onlyReport(t *testing.T, dir string) *Report {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "run-*.json"))
	if len(files) != 1 {
		t.Fatalf("want one report in %s, found %v", dir, files)
	}
	if _, err := os.Stat(strings.TrimSuffix(files[0], ".json") + ".txt"); err != nil {
		t.Errorf("no summary next to the report: %v", err)
	}
	var r Report
	readJSON(t, files[0], &r)
	return &r
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// noDatabasesLeft checks, on a dsn server, that the command dropped what it created (the other
// backends remove the whole server).
func noDatabasesLeft(t *testing.T, prefix string) {
	t.Helper()
	dsn := os.Getenv("PGQCHECK_DSN")
	if dsn == "" || (os.Getenv("PGQCHECK_PG") != "dsn" && os.Getenv("PGQCHECK_PG") != "" && os.Getenv("PGQCHECK_PG") != "auto") {
		return
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var names []string
	if err := conn.QueryRow(ctx, `SELECT coalesce(array_agg(datname), '{}') FROM pg_database WHERE starts_with(datname, $1)`, prefix).Scan(&names); err != nil {
		t.Fatal(err)
	}
	if len(names) > 0 {
		t.Errorf("databases left behind: %v", names)
	}
}

// TestStressAndCheckHistory runs the stress mode on a mutant only concurrency exposes, then
// re-checks the history it saved.
func TestStressAndCheckHistory(t *testing.T) {
	root, ok := moduleRoot()
	if !ok {
		t.Fatal("not inside the pgqcheck module")
	}
	rep, corpus := t.TempDir(), t.TempDir()
	r := pgqcheck(t, nil, "run", "--mode", "stress", "--duration", "30s", "--report", rep, "--corpus", corpus,
		"--sql-dir", filepath.Join(root, "testdata", "mutants", "claim-without-lock"))
	report := onlyReport(t, rep)
	if r.code != exitViolation || len(report.Failures) != 1 || report.Failures[0].ReplayFile == "" {
		t.Fatalf("exit %d, %d failures\n%s%s", r.code, len(report.Failures), r.stdout, r.stderr)
	}
	f := report.Failures[0]
	html := filepath.Join(t.TempDir(), "timeline.html")
	c := pgqcheck(t, nil, "check-history", f.ReplayFile, "-html", html)
	if c.code != exitViolation || !strings.Contains(c.stdout, "FAIL: property") {
		t.Errorf("check-history: exit %d\n%s%s", c.code, c.stdout, c.stderr)
	}
	if st, err := os.Stat(html); err != nil || st.Size() == 0 {
		t.Errorf("no timeline written: %v", err)
	}
	noDatabasesLeft(t, "pgqcheck_run_")
}

// copyModule copies the module's source tree (not .git) into a temp dir.
func copyModule(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			if rel == ".git" || d.Name() == "pgqcheck-reports" || d.Name() == "pgqcheck-evidence" {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
