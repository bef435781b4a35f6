package sut_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgqcheck/pgqcheck/internal/suttest"
	"github.com/pgqcheck/pgqcheck/model"
	"github.com/pgqcheck/pgqcheck/sut"
)

// copyLifecycle writes the built-in lifecycle queue into a temp folder, with edits applied (an
// empty string removes the file).
func copyLifecycle(t *testing.T, edits map[string]string) string {
	t.Helper()
	src := filepath.Join("queues", "lifecycle")
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(b)
	}
	return writeFolder(t, files, edits)
}

func TestLifecycleLoadErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		seed  bool // edit the seed, not the lifecycle queue
		edits map[string]string
		want  string
	}{
		{"limit without fail.sql", true, map[string]string{sut.FileConfig: `{"max_attempts": 3}`}, `fail.sql: missing; queue.json declares "max_attempts", which speaks of failed attempts`},
		{"zero attempts", false, map[string]string{sut.FileConfig: `{"max_attempts": 0}`}, "max_attempts 0 is not a positive number"},
		{"bad backoff", false, map[string]string{sut.FileConfig: `{"backoff": {"base": "soon"}}`}, `backoff base "soon" is not a duration`},
		{"backoff factor", false, map[string]string{sut.FileConfig: `{"backoff": {"base": "1s", "factor": 0}}`}, "backoff factor 0 is less than 1"},
		{"backoff as a string", false, map[string]string{sut.FileConfig: `{"backoff": "1s"}`}, "queue.json: not valid"},
		{"unknown attempts", false, map[string]string{sut.FileConfig: `{"attempts": "fail"}`}, `attempts "fail" is unknown; use "end"`},
		{"unknown lapse", false, map[string]string{sut.FileConfig: `{"lapse": "count"}`}, `lapse "count" is unknown`},
		{"free lapse counted at the claim", false, map[string]string{sut.FileConfig: `{"attempts": "claim", "lapse": "free"}`}, `every claim is an attempt`},
		{"counted lapses without a rescue", false, map[string]string{sut.FileConfig: `{"attempts": "claim"}`}, `declare "reclaim": "rescue"`},
		{"rescue backoff without rescue.sql", false, map[string]string{sut.FileConfig: `{"rescue_backoff": true}`}, `rescue.sql: missing; queue.json declares "rescue_backoff"`},
		{"unknown lease owner", false, map[string]string{sut.FileConfig: `{"lease_owner": "session"}`}, `lease_owner "session" is unknown`},
		{"worker lease without renew.sql", false, map[string]string{sut.FileConfig: `{"lease_owner": "worker"}`, sut.FileRenew: ""}, `renew.sql: missing; queue.json declares "lease_owner": "worker"`},
		{"effect without its count", false, map[string]string{sut.FileEffects: ""}, "effects.sql: missing; effect.sql writes business effects"},
		{"count without the effect", false, map[string]string{sut.FileEffect: ""}, "effect.sql: missing; effects.sql counts business effects"},
		{"two fail statements", false, map[string]string{sut.FileFail: "SELECT 1; SELECT 2"}, "fail.sql: holds more than one statement"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := copyLifecycle(t, c.edits)
			if c.seed {
				dir = copySeed(t, c.edits)
			}
			_, err := sut.LoadDir(dir)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
			if strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "pgqcheck: ") {
				t.Fatalf("error is not one pgqcheck line: %q", err)
			}
		})
	}
}

func TestLifecycleLoadAccepts(t *testing.T) {
	q := sut.MustBuiltin("lifecycle")
	want, can := model.Lifecycle{MaxAttempts: 3, Backoff: 100 * time.Millisecond, Factor: 2}, model.Can{Lock: true, Fail: true, Renew: true, Effect: true}
	if q.Shape().Life != want || q.Can() != can || q.Reset == "" {
		t.Fatalf("the lifecycle queue declares %+v, shipping %+v (reset %q), want %+v, %+v and a reset.sql", q.Shape().Life, q.Can(), q.Reset, want, can)
	}
	q, err := sut.LoadDir(copyLifecycle(t, map[string]string{
		sut.FileConfig: `{"max_attempts": 5, "attempts": "claim", "reclaim": "rescue", "rescue_backoff": true, "backoff": {"base": "1s"}}`,
		sut.FileRescue: "UPDATE jobs SET state='ready' WHERE state='running' AND lease_until < clock_timestamp() RETURNING id",
	}))
	if err != nil {
		t.Fatal(err)
	}
	lc := q.Shape().Life
	if !lc.AttemptsAtClaim || !lc.LapsesCount || !lc.RescueBackoff || lc.Factor != 1 || lc.MaxAttempts != 5 {
		t.Fatalf("declared %+v", lc)
	}
}

func TestLifecycleInstallValidates(t *testing.T) {
	lc := sut.MustBuiltin("lifecycle")
	for _, c := range []struct {
		name  string
		edits map[string]string
		want  string
	}{
		{"fail without the error text", map[string]string{sut.FileFail: strings.ReplaceAll(lc.Fail, "$4::text", "'x'")}, "fail.sql: takes 3 parameters; the contract passes 4: id, generation, retryable (boolean), error text"},
		{"retryable not a boolean", map[string]string{sut.FileFail: strings.ReplaceAll(lc.Fail, "NOT $3::boolean", "$3::int=0")}, "fail.sql: $3 (retryable (boolean)) has type oid 23; the contract passes whether the failure may be retried, a boolean"},
		{"renew lease as text", map[string]string{sut.FileRenew: strings.ReplaceAll(lc.Renew, "$3::interval", "$3::text::interval")}, "renew.sql: $3 (lease length) has type oid 25; the contract passes the lease (an interval), as claim.sql takes it"},
		{"delay as text", map[string]string{sut.FileEnqueue: strings.ReplaceAll(lc.Enqueue, "$2::interval", "$2::text::interval")}, "enqueue.sql: $2 has type oid 25; the contract passes $1 the payload (jsonb), then optionally the run-at delay (interval)"},
		{"snapshot without attempts", map[string]string{sut.FileSnapshot: sut.MustBuiltin("seed").Snapshot}, "snapshot.sql: returns 4 columns; the contract expects 6: id, state, generation, lease_live, attempts, error"},
		{"effects without a count", map[string]string{sut.FileEffects: "SELECT DISTINCT job_id FROM fulfilled"}, "effects.sql: returns 1 columns; the contract expects 2: id, count"},
		{"worker heartbeat without a worker claim", map[string]string{sut.FileConfig: `{"lease_owner": "worker"}`, sut.FileRenew: "UPDATE jobs SET lease_until=clock_timestamp()+$2::interval WHERE state='running' AND $1::text IS NOT NULL RETURNING id"}, `claim.sql: takes no worker name; queue.json declares "lease_owner": "worker"`},
		{"reset fails", map[string]string{sut.FileReset: "INSERT INTO retry_policys VALUES (1)"}, `reset.sql: does not prepare: relation "retry_policys" does not exist`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := installErr(t, copyLifecycle(t, c.edits))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// The lifecycle queue's statements answer through a session as the contract says: a run-at
// delay, a failure kept with its attempt, a renewal, effects counted, and the retry policy
// rebuilt by reset.sql after the reset emptied it.
func TestLifecycleStatements(t *testing.T) {
	ctx := context.Background()
	in := suttest.Install(t, sut.MustBuiltin("lifecycle"))
	if !in.Queue.Can().Delay {
		t.Fatal("enqueue.sql takes a run-at delay, but the installed queue does not say so")
	}
	s, err := in.Connect(ctx, "w0", sut.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for round := 0; round < 2; round++ { // the second after a reset: reset.sql put the policy back
		late, _, err := s.EnqueueAt(ctx, `{}`, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Enqueue(ctx, `{}`); err != nil {
			t.Fatal(err)
		}
		id, gen, ok, _, err := s.Claim(ctx, time.Hour)
		if err != nil || !ok || id == late {
			t.Fatalf("claim: job %d gen %d ok %v (%v); the job due in an hour must wait", id, gen, ok, err)
		}
		if n, _, err := s.Renew(ctx, id, gen, time.Hour); err != nil || n != 1 {
			t.Fatalf("renew: %d rows, %v", n, err)
		}
		if n, _, err := s.Fail(ctx, id, gen, true, "timeout calling the bank"); err != nil || n != 1 {
			t.Fatalf("fail: %d rows, %v", n, err)
		}
		if n, _, err := s.Fail(ctx, id, gen, true, "again"); err != nil || n != 0 {
			t.Fatalf("a second failure of the same claim: %d rows, %v", n, err)
		}
		rows, _, err := s.Snapshot(ctx)
		if err != nil || len(rows) != 2 || rows[1].Attempts != 1 || rows[1].Kept != "timeout calling the bank" || rows[1].State != model.Ready {
			t.Fatalf("snapshot %v (%v): want job %d ready after 1 attempt, keeping its error", rows, err, id)
		}
		if _, err := s.Effect(ctx, id); err != nil {
			t.Fatal(err)
		}
		if e, _, err := s.Effects(ctx); err != nil || len(e) != 1 || e[0] != (model.EffectCount{Job: id, Count: 1}) {
			t.Fatalf("effects %v, %v", e, err)
		}
		if err := in.Reset(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
