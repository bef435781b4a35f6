-- An outbox of order emails, claimed by workers with an expiring lease and fenced by a
-- counter that every claim moves on.
CREATE TABLE email_jobs (
  id bigserial PRIMARY KEY,
  status text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'sending', 'sent')),
  fence bigint NOT NULL DEFAULT 0,
  leased_until timestamptz,
  message jsonb NOT NULL
);
CREATE INDEX email_jobs_queued ON email_jobs (id) WHERE status = 'queued';
CREATE INDEX email_jobs_sending ON email_jobs (leased_until, id) WHERE status = 'sending';
