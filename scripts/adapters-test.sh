#!/usr/bin/env bash
# Vets and tests every adapters module (adapters/ holds the newest River and gue; a module per
# older River version, one for neoq, one for goqite): each asserts its queues' verdicts as
# measured and replays the counterexamples kept under its testdata/cases, and judges its
# library as deployed (internal/deploy: worker processes of the library's own client under
# process faults; River v0.51.2's run lasts about a minute and a quarter, gue's, neoq's and
# goqite's about 20 s each). Two lanes run side by side, neoq
# and River v0.47.0 in one, the rest in the other (measured beside a flake run: neoq's module
# 205 s, River v0.47.0's about 85 s, gue's and River v0.51.2's together 150 s, River v0.48.0's
# about 90 s): neoq's campaigns mostly wait (each claim starts a neoq backend and waits for its
# poll), and a campaign that ran fewer statements on a busier machine may find less, never
# something else (a shorter run's "held" is logged, not failed: judge.Check).
set -euo pipefail
cd "$(dirname "$0")/../adapters"
export PATH="$PATH:/usr/local/go/bin"
logs="$(mktemp -d /tmp/pgqcheck-adapters.XXXXXX)"
neoq_pid=""
# A Ctrl-C or CI's timeout signals the whole process group (each go test and test binary
# stops its servers); the neoq lane's shell is stopped too, so nothing runs on after. What the
# lanes printed is shown whichever way the script ends.
trap '[ -z "$neoq_pid" ] || kill "$neoq_pid" 2>/dev/null; cat "$logs"/* 2>/dev/null; rm -rf "$logs"' EXIT
trap 'exit 130' INT TERM
# lane NAME MODULE...: vets and tests each module in turn, its output in $logs/NAME.
lane() {
	local name="$1" begin=$SECONDS
	shift
	for mod in "$@"; do
		echo "adapters: $mod"
		(cd "$mod" && go vet ./... && go test -count=1 ./...) || return 1
	done >"$logs/$name" 2>&1
	echo "adapters: $name lane took $((SECONDS - begin)) s" >>"$logs/$name"
}
lane neoq-river047 neoq river047 &
neoq_pid=$!
status=0
lane river-gue . river048 riverq judge goqite || status=1
wait "$neoq_pid" || status=1
neoq_pid=""
exit "$status"
