-- Merchants, their API keys, their PSP credentials, charges and idempotency keys.
-- Times are Unix milliseconds (UTC); money is integer centavos; ids are prefixed strings.

CREATE TABLE merchants (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);

CREATE TABLE api_keys (
    id            TEXT PRIMARY KEY,
    merchant_id   TEXT NOT NULL REFERENCES merchants (id),
    environment   TEXT NOT NULL CHECK (environment IN ('test', 'live')),
    -- The key's first characters, kept in clear to find the row and to show in listings.
    prefix        TEXT NOT NULL,
    -- Hex SHA-256 of the whole key; the key itself is never stored.
    hash          TEXT NOT NULL UNIQUE,
    label         TEXT,
    created_at    BIGINT NOT NULL,
    last_used_at  BIGINT,
    revoked_at    BIGINT
);
CREATE INDEX api_keys_prefix ON api_keys (prefix);

CREATE TABLE credentials (
    id                    TEXT PRIMARY KEY,
    merchant_id           TEXT NOT NULL REFERENCES merchants (id),
    environment           TEXT NOT NULL CHECK (environment IN ('test', 'live')),
    provider              TEXT NOT NULL,
    label                 TEXT NOT NULL,
    -- JSON object of the fields that are not secret (client id, Pix key, certificate).
    public_fields         TEXT NOT NULL,
    -- JSON object field name -> vault-sealed value, for secrets and private keys.
    sealed_fields         TEXT NOT NULL,
    -- The <uuid> of {base_url}/api/wh/<uuid>.
    webhook_id            TEXT NOT NULL UNIQUE,
    webhook_token_sealed  TEXT NOT NULL,
    active                BIGINT NOT NULL DEFAULT 1,
    position              BIGINT NOT NULL DEFAULT 0,
    created_at            BIGINT NOT NULL,
    updated_at            BIGINT NOT NULL,
    -- Deleted credentials stay for the charges that name them, invisible to the API.
    deleted_at            BIGINT
);
CREATE INDEX credentials_merchant ON credentials (merchant_id, environment, provider);

CREATE TABLE charges (
    id               TEXT PRIMARY KEY,
    merchant_id      TEXT NOT NULL REFERENCES merchants (id),
    environment      TEXT NOT NULL CHECK (environment IN ('test', 'live')),
    credential_id    TEXT NOT NULL REFERENCES credentials (id),
    provider         TEXT NOT NULL,
    -- Gateway-chosen, sent to the PSP (txid, idempotency key, correlation id).
    reference        TEXT NOT NULL UNIQUE,
    psp_id           TEXT,
    -- 'creating' until the PSP answered; never shown through the API.
    status           TEXT NOT NULL,
    amount           BIGINT NOT NULL,
    description      TEXT,
    payer_email      TEXT,
    payer_name       TEXT,
    payer_document   TEXT,
    copy_paste       TEXT,
    qr_png_base64    TEXT,
    expires_at       BIGINT,
    metadata         TEXT NOT NULL DEFAULT '{}',
    paid_at          BIGINT,
    end_to_end_id    TEXT,
    amount_paid      BIGINT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL
);
-- Ids sort by creation time, so listings page by id.
CREATE INDEX charges_listing ON charges (merchant_id, environment, id);

CREATE TABLE idempotency_keys (
    merchant_id    TEXT NOT NULL,
    environment    TEXT NOT NULL,
    key            TEXT NOT NULL,
    -- Hex SHA-256 of method, path and body: the same key with another request is refused.
    request_hash   TEXT NOT NULL,
    -- The charge reference reserved by the first request: a retry after a crash reuses it, so
    -- the PSP sees the same reference and cannot create a second charge.
    reference      TEXT NOT NULL,
    -- NULL while the first request runs.
    response_status BIGINT,
    response_body  TEXT,
    -- A crashed first request frees the key for a retry after this time.
    locked_until   BIGINT NOT NULL,
    created_at     BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL,
    PRIMARY KEY (merchant_id, environment, key)
);
CREATE INDEX idempotency_expiry ON idempotency_keys (expires_at);
