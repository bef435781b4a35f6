#!/usr/bin/env bash
# user-module.sh: the public API as a user's repository meets it. Copies examples/ (a module
# of its own: a queue as SQL, a queue in Go, a saved counterexample) to a folder outside this
# tree, points its replace at this checkout, and runs its go test as is; then breaks the SQL
# queue's fencing and requires, in turn: a failure with the shrunk program, saved into that
# module's testdata/pgqcheck; the same failure again from the saved case alone; a pass once the
# queue is fixed. Exits 0 when all of that holds, 1 when a step does not (saying which).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
export PATH="$PATH:/usr/local/go/bin"
work="$(mktemp -d /tmp/pgqcheck-user-module.XXXXXX)"
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
cp -r "$root/examples" "$work/jobs"
cd "$work/jobs"
go mod edit -replace "github.com/pgqcheck/pgqcheck=$root"
step() { echo "user-module: $*"; }
fail() {
	echo "user-module: FAIL: $1" >&2
	[ -f "$work/out" ] && tail -n 40 "$work/out" >&2
	exit 1
}

step "go test ./... (the SQL queue and the Go queue, as committed)"
go test -count=1 ./... >"$work/out" 2>&1 || fail "the example module's tests fail as committed"

# The bug the saved case was found on: the fence compared with >=, so a stale one passes.
sed -i 's/fence = \$2/fence >= $2/' sqlqueue/sql/complete.sql
cases() { ls sqlqueue/testdata/pgqcheck/*.ops | wc -l; }
before=$(cases)
step "the broken queue, with its saved case set aside: fails with the shrunk program, saved"
mkdir "$work/kept" && mv sqlqueue/testdata/pgqcheck/*.ops "$work/kept/"
if go test -count=1 -run TestEmailQueue ./sqlqueue >"$work/out" 2>&1; then fail "the broken queue passed"; fi
grep -q 'property 1 (fencing)' "$work/out" || fail "the failure does not name property 1"
grep -q "program (queue's answers):" "$work/out" || fail "the failure does not show its program"
saved=$(grep -o 'saved as testdata/pgqcheck/[^ ]*\.ops' "$work/out" | head -n 1 | sed 's/^saved as //')
[ -n "$saved" ] && [ -f "sqlqueue/$saved" ] || fail "the failure's program was not saved into the module's testdata/pgqcheck"
step "  saved as sqlqueue/$saved ($(grep -c '^[a-z]' "sqlqueue/$saved") operations)"

step "the broken queue again: fails from the saved case, before any search"
if go test -count=1 -run TestEmailQueue ./sqlqueue >"$work/out" 2>&1; then fail "the saved case did not fail the broken queue again"; fi
grep -q 'saved programs fail' "$work/out" || fail "the second run did not fail from the saved case"

step "the queue fixed, every case kept: passes"
sed -i 's/fence >= \$2/fence = $2/' sqlqueue/sql/complete.sql
mv "$work/kept/"*.ops sqlqueue/testdata/pgqcheck/
[ "$(cases)" -gt "$before" ] || fail "the corpus did not grow"
go test -count=1 -run TestEmailQueue ./sqlqueue >"$work/out" 2>&1 || fail "the fixed queue fails its corpus"
step "ok: $(cases) saved case(s) replay on the fixed queue"
