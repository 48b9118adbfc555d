-- Routing over a merchant's PSPs (provider "random").

-- One round-robin counter per merchant and environment, advanced atomically so every gateway
-- on the database shares one queue.
CREATE TABLE routing_cursors (
    merchant_id  TEXT NOT NULL,
    environment  TEXT NOT NULL,
    counter      BIGINT NOT NULL,
    PRIMARY KEY (merchant_id, environment)
);

-- How many consecutive charges a credential takes before the turn passes on.
ALTER TABLE credentials ADD COLUMN route_limit BIGINT NOT NULL DEFAULT 1;

-- How a routed charge was placed: JSON {mode, selected_provider, attempted_providers}.
ALTER TABLE charges ADD COLUMN routing TEXT;

-- Every try at a PSP for a charge request, routed or not.
CREATE TABLE charge_attempts (
    reference      TEXT NOT NULL,
    attempt        BIGINT NOT NULL,
    credential_id  TEXT NOT NULL,
    provider       TEXT NOT NULL,
    at             BIGINT NOT NULL,
    -- created | rejected | unavailable | bad_credentials | not_found | ambiguous | found |
    -- absent | unknown | fault
    outcome        TEXT NOT NULL,
    message        TEXT,
    PRIMARY KEY (reference, attempt)
);
