-- Single sign-on (OpenID Connect) for the dashboard: each merchant's identity provider, the
-- e-mail domains it vouches for, and the sign-ins sent to it and not back yet.

-- One identity provider per merchant, set by its owner (Enterprise plan).
CREATE TABLE sso_configs (
    merchant_id          TEXT PRIMARY KEY REFERENCES merchants (id),
    -- Checked by OpenID Connect discovery when saved.
    issuer_url           TEXT NOT NULL,
    client_id            TEXT NOT NULL,
    -- Sealed by the vault, bound to ('sso_configs', merchant_id, 'client_secret').
    client_secret_sealed TEXT NOT NULL,
    -- manager | cashier | read_only: the role of a member created at their first sign-in.
    default_role         TEXT NOT NULL,
    -- The ID token claim whose values choose a role ('groups'); NULL: the default role only.
    role_claim           TEXT,
    -- JSON [{"value": "finance", "role": "manager"}, …]: the first value the claim holds wins.
    role_mapping         TEXT NOT NULL DEFAULT '[]',
    -- 1: everyone but the owners signs in with SSO (password sign-in refused).
    require_sso          BIGINT NOT NULL DEFAULT 0,
    created_at           BIGINT NOT NULL,
    updated_at           BIGINT NOT NULL
);

-- The e-mail domains a merchant's provider signs people in for. A domain belongs to one
-- merchant: "sign in with SSO" by e-mail address finds the merchant here.
CREATE TABLE sso_domains (
    domain      TEXT PRIMARY KEY,
    merchant_id TEXT NOT NULL REFERENCES merchants (id)
);
CREATE INDEX sso_domains_merchant ON sso_domains (merchant_id);

-- A sign-in sent to the provider: found by the SHA-256 of its state (the browser holds the
-- state in a short-lived cookie), taken once by the callback, useless after expires_at.
CREATE TABLE sso_attempts (
    state_hash    TEXT PRIMARY KEY,
    merchant_id   TEXT NOT NULL REFERENCES merchants (id),
    nonce         TEXT NOT NULL,
    pkce_verifier TEXT NOT NULL,
    next_path     TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL
);
CREATE INDEX sso_attempts_expires ON sso_attempts (expires_at);
