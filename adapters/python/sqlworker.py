#!/usr/bin/env python3
"""A worker of a queue folder of SQL, in Python, for pgqcheck's deployment mode.

It speaks the worker protocol of docs/deploy.md, in the role "work" (the Go SQL worker plays
the other roles): it reads its configuration from PGQCHECK_DEPLOY, claims a job with the
folder's claim.sql, works on it for the time the run's seed draws, completes it with
complete.sql, and appends an event for every statement and execution to its events file, one
JSON object a line, each written whole with one write. Every time is the database's
clock_timestamp(), read on the worker's own connection, in microseconds since the Unix epoch.
A completion that changes nothing is never retried. It runs until SIGTERM or SIGINT, which it
honours between executions.

Needs Python 3 and psycopg 3 (Debian: apt-get install python3-psycopg).
"""

import json
import os
import signal
import sys
import time

import psycopg

MASK = (1 << 64) - 1


def work_for(seed, job, attempt, lo, hi):
    """The execution's work in seconds: the protocol's splitmix64 draw, as Go's WorkFor."""
    if hi <= lo:
        return lo / 1000
    x = (seed ^ ((job * 0x9E3779B97F4A7C15) & MASK) ^ ((attempt * 0xBF58476D1CE4E5B9) & MASK)) & MASK
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & MASK
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & MASK
    x ^= x >> 31
    return (lo + x % (hi - lo + 1)) / 1000


class Events:
    """The events file: one write per event, appended."""

    def __init__(self, path, worker):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.pid = os.getpid()
        self.seq = 0
        self.floor = 0
        self.write({"ev": "hello", "worker": worker, "runs": "Python %d.%d, psycopg %s" % (sys.version_info[0], sys.version_info[1], psycopg.__version__)})

    def write(self, event):
        event["pid"] = self.pid
        os.write(self.fd, (json.dumps(event, separators=(",", ":")) + "\n").encode())

    def saw(self, t):
        if t:
            self.floor = max(self.floor, t)

    def send(self, op, job=0, gen=0):
        self.seq += 1
        self.write({"ev": "send", "seq": self.seq, "op": op, "job": job, "gen": gen, "floor": self.floor})
        return self.seq

    def answer(self, seq, op, event):
        event.update({"ev": "answer", "seq": seq, "op": op})
        self.saw(event.get("from"))
        self.saw(event.get("to"))
        self.write(event)


CLOCK = "SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint"


class Worker:
    def __init__(self, cfg):
        self.cfg = cfg
        folder = cfg["queue"]
        if not os.path.isdir(folder):
            sys.exit("pgqcheck python worker: %s is not a queue folder; the Python worker reads claim.sql and complete.sql from one" % folder)
        with open(os.path.join(folder, "claim.sql")) as f:
            self.claim_sql = f.read().strip().rstrip(";")
        with open(os.path.join(folder, "complete.sql")) as f:
            self.complete_sql = f.read().strip().rstrip(";")
        self.events = Events(cfg["events"], cfg["worker"])
        self.conn = None
        self.stopping = False

    def connect(self):
        """Opens the session, retrying while the database is out of reach (a cut, a restart)."""
        deadline = time.monotonic() + 120
        while self.conn is None:
            try:
                conn = psycopg.connect(self.cfg["dsn"] + " gssencmode=disable application_name=pgqcheck-" + self.cfg["worker"], autocommit=True)
                conn.execute("PREPARE claim AS " + self.claim_sql)
                conn.execute("PREPARE complete AS " + self.complete_sql)
                self.conn = conn
            except psycopg.Error as e:
                if self.stopping or time.monotonic() > deadline:
                    sys.exit("pgqcheck python worker %s: no connection to the queue's database: %s" % (self.cfg["worker"], e))
                time.sleep(0.05)

    def clock(self):
        return self.conn.execute(CLOCK).fetchone()[0]

    def timed(self, sql, params):
        """Runs a statement between two readings of the clock; returns (answer event, rows)."""
        ans, rows = {}, []
        try:
            ans["from"] = self.clock()
            # EXECUTE of a prepared statement takes its arguments as literals: bound client-side.
            cur = psycopg.ClientCursor(self.conn)
            rows = cur.execute(sql, params).fetchall()
            ans["to"] = self.clock()
        except psycopg.Error as e:
            ans["err"] = str(e).strip()
            if getattr(e, "sqlstate", None) is None or self.conn.closed:
                # The answer was lost: the statement may have taken effect.
                ans["lost"] = True
                ans.pop("to", None)
                try:
                    self.conn.close()
                finally:
                    self.conn = None
        return ans, rows

    def execute(self):
        lease = "%d milliseconds" % self.cfg.get("lease_ms", 0)
        seq = self.events.send("claim")
        ans, rows = self.timed("EXECUTE claim(%s::interval)", (lease,))
        if "err" not in ans and len(rows) > 1:
            ans.update({"err": "claim returned %d rows" % len(rows), "rows": len(rows)})
        found = "err" not in ans and len(rows) == 1
        if found:
            job, gen = int(rows[0][0]), int(rows[0][1])
            ans.update({"found": True, "job": job, "gen": gen})
        self.events.answer(seq, "claim", ans)
        if not found:
            time.sleep(max(self.cfg.get("poll_ms", 1), 1) / 1000)
            return
        self.events.write({"ev": "start", "job": job, "gen": gen, "at": ans["to"], "claimed": ans["from"]})
        lo, hi = self.cfg["work_ms"]
        time.sleep(work_for(self.cfg["seed"], job, gen, lo, hi))
        seq = self.events.send("complete", job, gen)
        ans, rows = self.timed("EXECUTE complete(%s, %s)", (job, gen))
        if "err" not in ans:
            ans["rows"] = int(rows[0][0])
        ans.update({"job": job, "gen": gen})
        self.events.answer(seq, "complete", ans)
        result = "failed" if "err" in ans else ("done" if ans["rows"] == 1 else "refused")
        end = {"ev": "end", "job": job, "gen": gen, "result": result}
        if ans.get("to"):
            end["at"] = ans["to"]
        self.events.write(end)

    def run(self):
        def stop(*_):
            self.stopping = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        while not self.stopping:
            self.connect()
            self.execute()


def main():
    raw = os.environ.get("PGQCHECK_DEPLOY")
    if not raw:
        sys.exit("pgqcheck python worker: PGQCHECK_DEPLOY is not set; a worker is started by pgqcheck's deployment mode, which passes its configuration there")
    cfg = json.loads(raw)
    if cfg.get("role") != "work":
        sys.exit("pgqcheck python worker: role %r; this worker plays the work role only" % cfg.get("role"))
    Worker(cfg).run()


if __name__ == "__main__":
    main()
