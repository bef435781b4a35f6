package protocol

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReadDropsACutLastLine: a worker killed while writing leaves its last line short; the
// lines before it are read, and a bad line anywhere else is an error naming it.
func TestReadDropsACutLastLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "w1.jsonl")
	whole := `{"ev":"hello","pid":7,"worker":"w1"}` + "\n" + `{"ev":"send","pid":7,"seq":1,"op":"claim"}` + "\n"
	if err := os.WriteFile(path, []byte(whole+`{"ev":"answ`), 0o644); err != nil {
		t.Fatal(err)
	}
	evs, err := Read(path)
	if err != nil || len(evs) != 2 || evs[1].Op != OpClaim || evs[1].Seq != 1 {
		t.Fatalf("read %v, %v; want the two whole lines", evs, err)
	}
	if err := os.WriteFile(path, []byte(`{"ev":"hello"}`+"\nnot json\n"+whole), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); err == nil || !strings.Contains(err.Error(), ":2:") {
		t.Fatalf("a bad middle line read as %v; want an error naming line 2", err)
	}
	if evs, err := Read(filepath.Join(dir, "never-written.jsonl")); err != nil || len(evs) != 0 {
		t.Fatalf("a worker that wrote nothing read as %v, %v", evs, err)
	}
}

// TestWorkFor: the work drawn for an execution is the same for the same seed, job and attempt,
// within its bounds, and differs across attempts (a replay works as long as the run did).
func TestWorkFor(t *testing.T) {
	seen := map[time.Duration]bool{}
	for attempt := int64(1); attempt <= 50; attempt++ {
		d := WorkFor(9, 3, attempt, 50, 150)
		if d != WorkFor(9, 3, attempt, 50, 150) {
			t.Fatalf("attempt %d drew two works", attempt)
		}
		if d < 50*time.Millisecond || d > 150*time.Millisecond {
			t.Fatalf("attempt %d drew %v, outside [50ms, 150ms]", attempt, d)
		}
		seen[d] = true
	}
	if len(seen) < 20 {
		t.Fatalf("50 attempts drew %d distinct works", len(seen))
	}
	if WorkFor(9, 3, 1, 80, 80) != 80*time.Millisecond {
		t.Fatalf("a fixed work drew another")
	}
}

// TestConfigFromEnv: a worker started without its configuration, or with a wrong role, says
// so in one line.
func TestConfigFromEnv(t *testing.T) {
	t.Setenv(EnvConfig, "")
	if _, err := FromEnv(); err == nil || !strings.Contains(err.Error(), EnvConfig) {
		t.Fatalf("no configuration read as %v", err)
	}
	t.Setenv(EnvConfig, `{"role":"dance","dsn":"x","events":"e","worker":"w1"}`)
	if _, err := FromEnv(); err == nil || !strings.Contains(err.Error(), "dance") {
		t.Fatalf("a wrong role read as %v", err)
	}
	t.Setenv(EnvConfig, `{"role":"work","dsn":"x","events":"e","worker":"w1","lease_ms":400}`)
	if c, err := FromEnv(); err != nil || c.Lease() != 400*time.Millisecond {
		t.Fatalf("a good configuration read as %+v, %v", c, err)
	}
}
