#!/bin/sh
# Entrypoint of the images built by scripts/build-pg-image.sh (pgqcheck/postgres:15 from the
# host's binaries; pgqcheck/postgres:18.6 and :17 with --from-debian).
#
# A subset of the official postgres image's contract, enough for
# testcontainers-go's postgres module:
#   POSTGRES_USER              superuser name (default postgres)
#   POSTGRES_PASSWORD          its password; remote logins use scram-sha-256
#                              (without a password remote logins are trusted)
#   POSTGRES_DB                database created at first start (default: the user name)
#   POSTGRES_HOST_AUTH_METHOD  overrides the pg_hba method for remote hosts
#   POSTGRES_INITDB_ARGS       extra initdb arguments
#   PGDATA                     cluster directory (default /var/lib/postgresql/data)
# Arguments: "postgres [options]" or "[options]" start the server with those
# options (e.g. "postgres -c fsync=off"); any other command is executed as is.
#
# The server is started once: the database is created in single-user mode
# before the server opens, so "database system is ready to accept
# connections" is logged exactly once, when it really is ready.
set -eu

: "${PGDATA:=/var/lib/postgresql/data}"
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
: "${POSTGRES_PASSWORD:=}"
: "${POSTGRES_HOST_AUTH_METHOD:=}"
: "${POSTGRES_INITDB_ARGS:=}"
export PGDATA

if [ "$#" -gt 0 ] && [ "$1" = postgres ]; then
	shift
elif [ "$#" -gt 0 ] && [ "${1#-}" = "$1" ]; then
	exec "$@"
fi

# As PID 1 the shell ignores signals it has no trap for: make docker stop
# during initialisation quick too.
trap 'exit 143' TERM
trap 'exit 130' INT

say() { printf 'pgqcheck-entrypoint: %s\n' "$*" >&2; }

if [ ! -s "$PGDATA/PG_VERSION" ]; then
	if ! mkdir -p "$PGDATA" 2>/dev/null || [ ! -w "$PGDATA" ]; then
		say "$PGDATA is not writable by uid $(id -u 2>/dev/null || echo '?'); mount a directory owned by uid 999 or leave PGDATA alone"
		exit 1
	fi
	chmod 700 "$PGDATA" 2>/dev/null || true

	pwfile=
	if [ -n "$POSTGRES_PASSWORD" ]; then
		pwfile=/tmp/.pgqcheck-pw.$$
		(umask 077 && printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile")
	fi
	# shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is a list of words
	if ! out=$(initdb -D "$PGDATA" -U "$POSTGRES_USER" -E UTF8 --locale=C -A trust --no-sync \
		${pwfile:+--pwfile="$pwfile"} $POSTGRES_INITDB_ARGS 2>&1); then
		[ -z "$pwfile" ] || rm -f "$pwfile"
		printf '%s\n' "$out" >&2
		say "initdb failed"
		exit 1
	fi
	[ -z "$pwfile" ] || rm -f "$pwfile"

	method=$POSTGRES_HOST_AUTH_METHOD
	if [ -z "$method" ]; then
		if [ -n "$POSTGRES_PASSWORD" ]; then method=scram-sha-256; else method=trust; fi
	fi
	cat >"$PGDATA/pg_hba.conf" <<EOF
# TYPE  DATABASE  USER  ADDRESS       METHOD
local   all       all                 trust
host    all       all   127.0.0.1/32  trust
host    all       all   ::1/128       trust
host    all       all   all           $method
EOF
	cat >>"$PGDATA/postgresql.conf" <<EOF

# pgqcheck image defaults
listen_addresses = '*'
jit = off
EOF

	if [ "$POSTGRES_DB" != postgres ]; then
		# Single-user mode runs as the bootstrap superuser.
		out=$(printf 'CREATE DATABASE "%s" OWNER "%s"\n' "$POSTGRES_DB" "$POSTGRES_USER" |
			postgres --single -D "$PGDATA" -c fsync=off -c jit=off postgres 2>&1) || {
			printf '%s\n' "$out" >&2
			say "cannot create database $POSTGRES_DB"
			exit 1
		}
		case $out in
		*ERROR*)
			printf '%s\n' "$out" >&2
			say "cannot create database $POSTGRES_DB"
			exit 1
			;;
		esac
	fi
	say "initialised $PGDATA (user $POSTGRES_USER, database $POSTGRES_DB, remote auth $method)"
fi

# docker stop sends SIGTERM, which to postgres means a "smart" shutdown that
# waits for every client to leave; the image cannot set STOPSIGNAL (docker
# import does not accept it), so the shell stays as PID 1 and turns SIGTERM
# into a fast shutdown (SIGINT).
postgres -D "$PGDATA" "$@" &
pid=$!
trap 'kill -INT "$pid" 2>/dev/null || :' TERM INT
trap 'kill -QUIT "$pid" 2>/dev/null || :' QUIT
status=0
while kill -0 "$pid" 2>/dev/null; do
	if wait "$pid"; then status=0; else status=$?; fi
done
exit "$status"
