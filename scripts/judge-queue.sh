#!/usr/bin/env bash
# Judges a queue folder, for a CI job (and the GitHub Action, action.yml) to call:
#
#   bash scripts/judge-queue.sh QUEUE_DIR REPORT_DIR
#
# QUEUE_DIR holds the queue's SQL files (the contract: docs/contract.md).
# It runs:
#   1. go test -count=1 -run "$JUDGE_TESTS" .   (default 'Prop|Linear'; empty: skip)
#      with PGQCHECK_SQL_DIR=QUEUE_DIR;
#   2. pgqcheck run --sql-dir QUEUE_DIR --duration "$JUDGE_DURATION" (default 2m;
#      0: skip), a campaign of sequential, stress and scheduled rounds.
# REPORT_DIR (created; keep it as the job's artifact) then holds:
#   verdict.txt    one line per step and the overall verdict
#   go-test.log    the output of step 1
#   campaign.log   the output of step 2
#   campaign/      its report: run-*.json, run-*.txt, report folders of concurrent failures
#                  (history.json, job.json, timeline.html, verdict.txt)
#   found/         the cases saved under testdata/ for plain go test to replay (commit them)
# Exit status: 0 every property held, 1 a violation, 2 a usage or environment error.
#
# Postgres: PGQCHECK_PG, docker by default. PGQCHECK_PG=local runs the machine's own
# binaries (the first initdb on PATH; the Action puts the version asked for there with
# scripts/install-postgres.sh). On docker, the image is $PGQCHECK_IMAGE if set; else
# postgres:18.6 or pgqcheck/postgres:18.6,
# whichever is present; else `docker pull postgres:18.6` (at most
# $JUDGE_PULL_TIMEOUT s, default 300); else, as root on Debian, it is built
# from Debian's archive (scripts/build-pg-image.sh --from-debian 18.6).
# PGQCHECK_PG=dsn with PGQCHECK_DSN uses an existing server instead.
set -euo pipefail

usage() {
	echo "judge-queue: $*" >&2
	echo "usage: bash scripts/judge-queue.sh QUEUE_DIR REPORT_DIR" >&2
	exit 2
}
die() {
	echo "judge-queue: $*" >&2
	exit 2
}

[ "$#" -eq 2 ] || usage "want two arguments, got $#"
[ -d "$1" ] || usage "queue folder $1 not found"
QUEUE="$(cd "$1" && pwd)"
mkdir -p "$2" || die "cannot create the report folder $2"
REPORT="$(cd "$2" && pwd)"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JUDGE_TESTS="${JUDGE_TESTS-Prop|Linear}"
JUDGE_DURATION="${JUDGE_DURATION:-2m}"
export PGQCHECK_PG="${PGQCHECK_PG:-docker}"
export PGQCHECK_SQL_DIR="$QUEUE"
command -v go >/dev/null || PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || die "go not found; install Go (the version in $REPO/go.mod)"
cd "$REPO"

verdict="$REPORT/verdict.txt"
: >"$verdict"
note() {
	echo "judge-queue: $*"
	echo "$*" >>"$verdict"
}

# An image of PostgreSQL 18.6, without ever waiting on a registry for long.
if [ "$PGQCHECK_PG" = docker ] && [ -z "${PGQCHECK_IMAGE:-}" ]; then
	docker info >/dev/null 2>&1 || die "no Docker engine answers (docker info failed); start Docker, or set PGQCHECK_PG=dsn and PGQCHECK_DSN"
	have=
	for im in postgres:18.6 pgqcheck/postgres:18.6; do
		if docker image inspect "$im" >/dev/null 2>&1; then have="$im" && break; fi
	done
	if [ -z "$have" ]; then
		echo "judge-queue: pulling postgres:18.6"
		if timeout "${JUDGE_PULL_TIMEOUT:-300}" docker pull -q postgres:18.6 >/dev/null 2>&1; then
			have=postgres:18.6
		elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
			echo "judge-queue: no registry answers; building pgqcheck/postgres:18.6 from Debian's archive"
			bash "$REPO/scripts/build-pg-image.sh" --from-debian 18.6 || die "cannot build pgqcheck/postgres:18.6 (see above)"
			have=pgqcheck/postgres:18.6
		else
			die "no PostgreSQL 18.6 image: docker pull postgres:18.6 failed; as root on Debian run: bash scripts/build-pg-image.sh --from-debian 18.6"
		fi
	fi
	export PGQCHECK_IMAGE="$have"
fi

# Cases saved under testdata/ during the run are copied to found/.
listing() { find testdata fuzz/testdata -type f 2>/dev/null | sort; }
before="$(listing)"

status=0
if [ -n "$JUDGE_TESTS" ]; then
	begin=$SECONDS
	set +e
	go test -count=1 -v -run "$JUDGE_TESTS" . >"$REPORT/go-test.log" 2>&1
	rc=$?
	set -e
	banner="$(grep -m1 '^pgqcheck: backend=' "$REPORT/go-test.log" || true)"
	if [ "$rc" = 0 ]; then
		note "go test -run '$JUDGE_TESTS': pass ($((SECONDS - begin)) s; ${banner#pgqcheck: })"
	else
		grep -E '^(--- FAIL|FAIL|pgqcheck: )' "$REPORT/go-test.log" | head -n 20 >&2 || true
		note "go test -run '$JUDGE_TESTS': FAIL ($((SECONDS - begin)) s; ${banner#pgqcheck: }; see go-test.log)"
		status=1
	fi
fi

if [ "$JUDGE_DURATION" != 0 ]; then
	begin=$SECONDS
	set +e
	go run ./cmd/pgqcheck run --sql-dir "$QUEUE" --duration "$JUDGE_DURATION" --report "$REPORT/campaign" >"$REPORT/campaign.log" 2>&1
	rc=$?
	set -e
	summary="$(grep -m1 '^  verdict: ' "$REPORT/campaign.log" | sed 's/^  verdict: //' || true)"
	case "$rc" in
	0) note "pgqcheck run --duration $JUDGE_DURATION: pass ($((SECONDS - begin)) s; $summary)" ;;
	1)
		note "pgqcheck run --duration $JUDGE_DURATION: FAIL ($((SECONDS - begin)) s; ${summary:-see campaign.log})"
		status=1
		;;
	*)
		tail -n 3 "$REPORT/campaign.log" >&2
		note "pgqcheck run --duration $JUDGE_DURATION: error (exit $rc; see campaign.log)"
		[ "$status" = 1 ] || status=2
		;;
	esac
fi

found="$(comm -13 <(echo "$before") <(listing) | sed '/^$/d')"
if [ -n "$found" ]; then
	while read -r f; do
		mkdir -p "$REPORT/found/$(dirname "$f")"
		cp "$f" "$REPORT/found/$f"
	done <<<"$found"
	note "saved cases: $(wc -l <<<"$found") file(s) in found/ (copy them into the pgqcheck checkout to replay with go test)"
fi
case "$status" in
0) note "verdict: every property held for $QUEUE" ;;
1) note "verdict: VIOLATION in $QUEUE" ;;
*) note "verdict: could not judge $QUEUE" ;;
esac
exit "$status"
