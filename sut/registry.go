package sut

import (
	"fmt"
	"sort"
	"sync"

	"github.com/pgqcheck/pgqcheck/model"
)

// registry translates what the declared forms make the queue's own (opaque ids, claim tokens,
// the lack of a generation counter) into the (job, generation) the model and every mode speak
// of. One registry serves every session of an installed queue, since a job enqueued by one
// session is claimed and completed by others.
type registry struct {
	mu     sync.Mutex
	byText map[string]int64 // opaque id -> job number, in the order the suite first saw it
	texts  []string         // job number - 1 -> opaque id
	claims map[int64]int64  // job -> the suite's last claim number for it (NoGeneration)
	tokens map[claimKey][]any
}

type claimKey struct{ job, gen int64 }

func newRegistry() *registry {
	r := &registry{}
	r.reset()
	return r
}

func (r *registry) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byText, r.texts = map[string]int64{}, nil
	r.claims, r.tokens = map[int64]int64{}, map[claimKey][]any{}
}

// job returns the number of an opaque id, giving it the next number when it is new (an id no
// enqueue returned: the model then says it was never enqueued).
func (r *registry) job(text string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n, ok := r.byText[text]; ok {
		return n
	}
	r.texts = append(r.texts, text)
	n := int64(len(r.texts))
	r.byText[text] = n
	return n
}

// text returns the opaque id of a job number.
func (r *registry) text(job int64) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if job < 1 || job > int64(len(r.texts)) {
		return "", fmt.Errorf("job %d was never returned by the queue", job)
	}
	return r.texts[job-1], nil
}

// claimed numbers a claim of a job whose queue keeps no generation: one more than the last
// claim of it whose answer the suite saw. Numbers only have to be distinct per job: answers of
// concurrent claims may come back in any order.
func (r *registry) claimed(job int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.claims[job]++
	return r.claims[job]
}

// generation is the suite's last claim number of a job (NoGeneration's snapshots).
func (r *registry) generation(job int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.claims[job]
}

func (r *registry) keep(job, gen int64, token []any) {
	if len(token) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tokens[claimKey{job, gen}] = token
}

// token is what the claim that returned (job, gen) handed out beyond them; n NULLs when no such
// claim came back (a completion the harness made up never reaches here, but a replay may).
func (r *registry) token(job, gen int64, n int) []any {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.tokens[claimKey{job, gen}]; ok {
		return t
	}
	return make([]any, n)
}

// sortRows orders a snapshot by job number: opaque ids have no order of their own.
func sortRows(rows []model.Row) {
	sort.SliceStable(rows, func(a, b int) bool { return rows[a].ID < rows[b].ID })
}
