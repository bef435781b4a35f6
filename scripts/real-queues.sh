#!/usr/bin/env bash
# Prints the verdict table of the real Go queues (adapters/): per queue, version and property,
# held, violated or not promised, how many campaigns found a counterexample and the median time
# they took to find it from scratch. Each module pins its own queue versions; every campaign
# starts from an empty testdata folder, so no saved case is replayed first.
#
#   scripts/real-queues.sh                       5 seeds per mode, 8 s per campaign
#   REALQ_SEEDS=1 REALQ_BUDGET=4s scripts/real-queues.sh
#   REALQ_KEEP=1 scripts/real-queues.sh          also keeps each fastest counterexample under
#                                                <module>/testdata/cases (replayed by go test)
set -euo pipefail
cd "$(dirname "$0")/../adapters"
export PATH="$PATH:/usr/local/go/bin"
seeds="${REALQ_SEEDS:-5}" budget="${REALQ_BUDGET:-8s}"
table="$(mktemp /tmp/pgqcheck-realq.XXXXXX)"
trap 'rm -f "$table"' EXIT
for mod in . river047 river048 neoq; do
	log="$(mktemp /tmp/pgqcheck-realq-log.XXXXXX)"
	# The verdicts asserted by go test may differ from a longer run's; the table shows what
	# this run measured, and a failing assertion is printed below it.
	if ! (cd "$mod" && PGQCHECK_REALQ_SEEDS="$seeds" PGQCHECK_REALQ_BUDGET="$budget" \
		PGQCHECK_REALQ_TABLE="$table" PGQCHECK_REALQ_KEEP="${REALQ_KEEP:-}" \
		go test -count=1 -timeout 60m -run '^TestVerdicts$' -v ./... >"$log" 2>&1); then
		echo "real-queues: $mod: verdicts differ from the ones go test asserts:" >&2
		grep -E -- '--- FAIL|measured before|harness|panic|_test.go:[0-9]+: ' "$log" | grep -v ' seed [0-9]*: ' >&2 || cat "$log" >&2
	fi
	rm -f "$log"
done
echo "| queue | version | property | verdict | found by | median time to find |"
echo "|---|---|---|---|---|---|"
sort -t$'\t' -k1,1 -k3,3n "$table" | awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6 }'
echo
echo "($seeds seeds per mode, $budget per campaign; modes sequential, stress and scheduled; $(go version | awk '{print $3}'), PGQCHECK_PG=${PGQCHECK_PG:-auto})"
