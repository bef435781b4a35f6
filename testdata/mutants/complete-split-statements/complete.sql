-- Bug: the completion is split into two statements, "check the token and answer" and "mark the
-- job done". This statement is the first (and the second of this session's previous
-- completion); a worker that never sends its next statement on this connection leaves the
-- job half done: its completion was accepted, and the job runs on, to be claimed again once
-- its lease lapses.
WITH second_half AS (
  UPDATE jobs SET state='done', finisher=NULL WHERE finisher=pg_backend_pid() AND id<>$1
), completed AS (
  UPDATE jobs SET finisher=pg_backend_pid(), finisher_app=current_setting('application_name')
  WHERE id=$1 AND state_of(state, finisher, finisher_app)='running' AND generation=$2
    AND lease_until>clock_timestamp()
  RETURNING id
) SELECT count(*) FROM completed
