#!/usr/bin/env bash
# Vets and tests every adapters module (adapters/ holds the newest River and gue; a module per
# older River version, and one for neoq): each asserts its queues' verdicts as measured and
# replays the counterexamples kept under its testdata/cases.
set -euo pipefail
cd "$(dirname "$0")/../adapters"
export PATH="$PATH:/usr/local/go/bin"
for mod in . river047 river048 riverq judge neoq; do
	echo "adapters: $mod"
	(cd "$mod" && go vet ./... && go test -count=1 ./...)
done
