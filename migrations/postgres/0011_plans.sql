-- Plans and limits: every merchant's plan, the monthly charge counter the charge insert checks
-- and advances, and indexes for the log-retention sweeps. Same schema as
-- sqlite/0011_plans.sql.

-- free | basic | pro | business | scale | enterprise | ultra | ultra_2 (host/src/plans.rs);
-- existing merchants and new sign-ups start on Free.
ALTER TABLE merchants ADD COLUMN plan TEXT NOT NULL DEFAULT 'free';

-- Charges created per merchant, environment and calendar month in São Paulo ('2026-11'),
-- advanced in the transaction of each charge's insert (and back when the PSP refused it).
CREATE TABLE plan_usage (
    merchant_id  TEXT NOT NULL REFERENCES merchants (id),
    environment  TEXT NOT NULL CHECK (environment IN ('test', 'live')),
    month        TEXT NOT NULL,
    charges      BIGINT NOT NULL,
    PRIMARY KEY (merchant_id, environment, month)
);

-- The charges made before this migration count too.
INSERT INTO plan_usage (merchant_id, environment, month, charges)
SELECT merchant_id, environment,
       to_char(to_timestamp(created_at / 1000.0) AT TIME ZONE 'America/Sao_Paulo', 'YYYY-MM'),
       COUNT(*)
FROM charges GROUP BY 1, 2, 3;

-- Log retention sweeps by age.
CREATE INDEX inbound_notifications_received ON inbound_notifications (received_at);
CREATE INDEX events_created ON events (created_at);
CREATE INDEX charge_attempts_at ON charge_attempts (at);
