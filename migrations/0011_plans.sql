-- Plans and limits: every merchant's plan, the monthly charge counter the charge insert checks
-- and advances, and indexes for the log-retention sweeps.

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

-- The charges made before this migration count too. São Paulo has kept UTC−3 all year since
-- 2019, so a fixed offset gives the month of every charge this gateway holds. The month is
-- worked out with integer arithmetic (days since 1970 → civil year and month), the one way
-- both backends speak: SQLite has no to_char, PostgreSQL no strftime.
INSERT INTO plan_usage (merchant_id, environment, month, charges)
SELECT merchant_id, environment,
       CAST(y + CASE WHEN m <= 2 THEN 1 ELSE 0 END AS TEXT) || '-'
           || CASE WHEN m < 10 THEN '0' ELSE '' END || CAST(m AS TEXT),
       COUNT(*)
FROM (
    SELECT merchant_id, environment, era * 400 + yoe AS y,
           CASE WHEN mp < 10 THEN mp + 3 ELSE mp - 9 END AS m
    FROM (
        SELECT merchant_id, environment, era, yoe,
               (5 * (doe - (365 * yoe + yoe / 4 - yoe / 100)) + 2) / 153 AS mp
        FROM (
            SELECT merchant_id, environment, era, doe,
                   (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365 AS yoe
            FROM (
                SELECT merchant_id, environment, z / 146097 AS era,
                       z - (z / 146097) * 146097 AS doe
                FROM (
                    SELECT merchant_id, environment,
                           (created_at / 1000 - 10800) / 86400 + 719468 AS z
                    FROM charges
                ) days
            ) eras
        ) years
    ) months
) civil
GROUP BY 1, 2, 3;

-- Log retention sweeps by age.
CREATE INDEX inbound_notifications_received ON inbound_notifications (received_at);
CREATE INDEX events_created ON events (created_at);
CREATE INDEX charge_attempts_at ON charge_attempts (at);
