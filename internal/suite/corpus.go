package suite

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pgqcheck/pgqcheck/internal/corpus"
	"github.com/pgqcheck/pgqcheck/sut"
)

// Programs replays saved programs on q: every one must hold. A program found on some queue
// keeps failing go test for as long as the queue being judged still has that bug; the queue
// it was found on is only information.
func Programs(t *testing.T, q *sut.Queue, c Config, cases []*corpus.Case) {
	t.Helper()
	// A failing scheduled case's report stays in the temporary folder for the reader.
	r := &corpus.Replayer{In: c.Install(t, q)}
	defer r.Close()
	var failing []string
	for _, cs := range cases {
		f, err := r.Replay(context.Background(), cs.Program)
		switch {
		case err != nil:
			t.Fatalf("%s: %v", cs.Path, err)
		case f != nil:
			// The program is in its file: one line a case keeps a long corpus readable.
			failing = append(failing, fmt.Sprintf("%s (%d operations): %s", cs.Path, len(cs.Program.Ops), f.Verdict()))
			c.Board.Found(t.Name(), q, f, cs.Path)
		}
	}
	if len(failing) > 0 {
		t.Errorf("%d saved programs fail on %s (pgqcheck replay FILE shows one):\n  %s", len(failing), q.Source, strings.Join(failing, "\n  "))
	}
}
