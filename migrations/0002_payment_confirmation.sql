-- Payment confirmation: inbound PSP notifications, the reconciler's schedule, webhook
-- endpoints, events and their outbox.

-- Every notification that passed authentication, stored before it is processed.
CREATE TABLE inbound_notifications (
    id             TEXT PRIMARY KEY,
    credential_id  TEXT NOT NULL REFERENCES credentials (id),
    received_at    BIGINT NOT NULL,
    method         TEXT NOT NULL,
    path           TEXT NOT NULL,
    query          TEXT NOT NULL,
    -- JSON array of [name, value] pairs, names in lowercase.
    headers        TEXT NOT NULL,
    -- base64 of the raw body.
    body           TEXT NOT NULL,
    -- received | processed | rejected | failed
    status         TEXT NOT NULL,
    outcome        TEXT,
    attempts       BIGINT NOT NULL DEFAULT 0,
    lease_until    BIGINT NOT NULL DEFAULT 0,
    lease_owner    TEXT,
    processed_at   BIGINT
);
CREATE INDEX inbound_notifications_pending ON inbound_notifications (status, lease_until);

-- When the reconciler next asks the PSP about a charge that can still change.
ALTER TABLE charges ADD COLUMN next_check_at BIGINT;
ALTER TABLE charges ADD COLUMN checks BIGINT NOT NULL DEFAULT 0;
ALTER TABLE charges ADD COLUMN check_lease_until BIGINT NOT NULL DEFAULT 0;
ALTER TABLE charges ADD COLUMN check_lease_owner TEXT;
CREATE INDEX charges_reconcile ON charges (status, next_check_at);

-- Webhook registration at the PSP, done when a credential is saved.
ALTER TABLE credentials ADD COLUMN webhook_registration TEXT;

CREATE TABLE webhook_endpoints (
    id                    TEXT PRIMARY KEY,
    merchant_id           TEXT NOT NULL REFERENCES merchants (id),
    environment           TEXT NOT NULL CHECK (environment IN ('test', 'live')),
    url                   TEXT NOT NULL,
    description           TEXT,
    -- JSON array of event types.
    events                TEXT NOT NULL,
    -- Vault-sealed `whsec_…`; during a rotation the previous one signs too, until it expires.
    secret_sealed         TEXT NOT NULL,
    previous_secret_sealed TEXT,
    previous_expires_at   BIGINT,
    -- enabled | disabled
    status                TEXT NOT NULL,
    disabled_reason       TEXT,
    failing_since         BIGINT,
    created_at            BIGINT NOT NULL,
    updated_at            BIGINT NOT NULL,
    deleted_at            BIGINT
);
CREATE INDEX webhook_endpoints_merchant ON webhook_endpoints (merchant_id, environment);

CREATE TABLE events (
    id           TEXT PRIMARY KEY,
    merchant_id  TEXT NOT NULL REFERENCES merchants (id),
    environment  TEXT NOT NULL CHECK (environment IN ('test', 'live')),
    type         TEXT NOT NULL,
    charge_id    TEXT REFERENCES charges (id),
    -- The whole event as delivered: {id, type, created_at, livemode, data: {object}}.
    payload      TEXT NOT NULL,
    created_at   BIGINT NOT NULL
);
CREATE INDEX events_listing ON events (merchant_id, environment, id);

-- The outbox: one row per event and endpoint, written in the transaction of the change.
CREATE TABLE webhook_deliveries (
    id               TEXT PRIMARY KEY,
    event_id         TEXT NOT NULL REFERENCES events (id),
    endpoint_id      TEXT NOT NULL REFERENCES webhook_endpoints (id),
    -- pending | delivered | failed (gave up) | canceled (endpoint disabled)
    status           TEXT NOT NULL,
    attempts         BIGINT NOT NULL DEFAULT 0,
    next_attempt_at  BIGINT NOT NULL,
    -- A worker holds a row while it delivers it; a lease that ran out frees the row again.
    lease_until      BIGINT NOT NULL DEFAULT 0,
    lease_owner      TEXT,
    last_status      BIGINT,
    last_error       TEXT,
    created_at       BIGINT NOT NULL,
    delivered_at     BIGINT
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id);

CREATE TABLE delivery_attempts (
    delivery_id       TEXT NOT NULL REFERENCES webhook_deliveries (id),
    attempt           BIGINT NOT NULL,
    at                BIGINT NOT NULL,
    status_code       BIGINT,
    latency_ms        BIGINT NOT NULL,
    error             TEXT,
    response_excerpt  TEXT,
    PRIMARY KEY (delivery_id, attempt)
);
