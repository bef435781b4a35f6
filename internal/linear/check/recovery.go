package check

import (
	"github.com/pgqcheck/pgqcheck/internal/linear/history"
	"github.com/pgqcheck/pgqcheck/model"
)

// Recovery after an uncertain answer, the seed's rule, is checked in three places:
//
//   - After an uncertain claim the worker must not invent a token: every completion presents a
//     job and generation that some claim's answer carried before the completion was sent
//     (inventedTokens, below). The porcupine model alone would accept an invented token that
//     happens to match what the uncertain claim did: the queue cannot tell.
//   - The job an uncertain claim may have taken becomes claimable again once its lease lapses:
//     the drain expires every lease (of every job in the table, those whose enqueue's answer
//     was lost among them) and claims until none, and the accounting (Account) reports every
//     job still there and not done as lost, whether its enqueue was acknowledged or not.
//   - After an uncertain completion the job is either done, or still running under that
//     generation and reclaimable once its lease lapses, never both: the model branches the
//     completion into applied and not applied, and porcupine rejects a history that needs
//     both (a job seen done and later claimed, or completed again); the accounting accepts a
//     job done by an uncertain completion alone, and counts an accepted completion besides it
//     once only if the uncertain one did not apply.

// inventedTokens reports every completion whose token no claim's answer had carried when it
// was sent: a token made up after an uncertain claim (property 6).
func inventedTokens(h *history.History) []*model.Violation {
	type token struct{ job, gen int64 }
	given := map[token]int64{} // the earliest call of a claim whose answer named the token
	for _, o := range h.Ops {
		if f := model.FactsOf(o.Input, o.Output); f.Took {
			t := token{f.Job, f.Gen}
			if c, ok := given[t]; !ok || o.Call < c {
				given[t] = o.Call
			}
		}
	}
	var out []*model.Violation
	seen := map[token]bool{}
	for _, o := range h.Ops {
		f := model.FactsOf(o.Input, o.Output)
		t := token{f.Job, f.Gen}
		if !f.Ends || o.Output.Outcome == model.NotSent || seen[t] {
			continue
		}
		if c, ok := given[t]; !ok || c >= o.Call {
			seen[t] = true
			out = append(out, model.Violate(model.PRecovery, "%s presented job %d generation %d, a token no claim's answer had carried: a worker invented it (after an uncertain claim it must wait for the lease to lapse, not guess)", o.Session, t.job, t.gen))
		}
	}
	return out
}
