-- Optimistic concurrency for what merchants edit: every change of a credential or a webhook
-- endpoint is checked against the version its editor read and moves it on by one, so of two
-- people editing at once the second gets 409 instead of silently undoing the first. Rows that
-- exist start at 1.
ALTER TABLE credentials ADD COLUMN version BIGINT NOT NULL DEFAULT 1;
ALTER TABLE webhook_endpoints ADD COLUMN version BIGINT NOT NULL DEFAULT 1;
