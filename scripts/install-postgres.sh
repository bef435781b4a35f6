#!/usr/bin/env bash
# install-postgres.sh MAJOR: PostgreSQL MAJOR's server binaries, for the local backend, from
# the machine's package archive or, where it has no such version, from apt.postgresql.org
# (through postgresql-common's own script); no cluster is created or started. Prints the
# binaries' folder and, in a GitHub Actions step, puts it first on the job's PATH, where the
# local backend looks first. This is what the pgqcheck Action runs (action.yml).
set -euo pipefail
die() { echo "install-postgres: $*" >&2; exit 2; }
[ "$#" -eq 1 ] && [[ "$1" =~ ^[0-9]+$ ]] || die "usage: bash scripts/install-postgres.sh MAJOR (a major version such as 17)"
major="$1"
bin="/usr/lib/postgresql/$major/bin"
sudo=""
[ "$(id -u)" = 0 ] || sudo=sudo
if [ ! -x "$bin/postgres" ]; then
	command -v apt-get >/dev/null || die "no apt-get here; install PostgreSQL $major's server binaries and put their folder first on PATH"
	export DEBIAN_FRONTEND=noninteractive
	# The suite starts throwaway clusters of its own: the package's default one is not wanted.
	$sudo mkdir -p /etc/postgresql-common
	echo 'create_main_cluster = false' | $sudo tee /etc/postgresql-common/createcluster.conf >/dev/null
	$sudo apt-get update -qq
	if ! apt-cache show "postgresql-$major" >/dev/null 2>&1; then
		$sudo apt-get install -y -qq postgresql-common >/dev/null
		$sudo /usr/share/postgresql-common/pgdg/apt.postgresql.org.sh -y >/dev/null
	fi
	$sudo apt-get install -y -qq "postgresql-$major" >/dev/null || die "apt-get install postgresql-$major failed (see above)"
fi
[ -x "$bin/postgres" ] || die "postgresql-$major installed no $bin/postgres"
[ -z "${GITHUB_PATH:-}" ] || echo "$bin" >>"$GITHUB_PATH"
echo "$bin"
