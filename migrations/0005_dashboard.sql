-- The merchant dashboard: people, their roles at merchants, sessions, invitations, sign-in
-- throttling and the audit log.

CREATE TABLE users (
    id             TEXT PRIMARY KEY,
    -- Lower-cased; one account per address.
    email          TEXT NOT NULL UNIQUE,
    name           TEXT NOT NULL,
    -- Argon2id, PHC string format.
    password_hash  TEXT NOT NULL,
    -- 'pt-BR' or 'en', once chosen with the language switch.
    locale         TEXT,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL
);

CREATE TABLE memberships (
    merchant_id  TEXT NOT NULL REFERENCES merchants (id),
    user_id      TEXT NOT NULL REFERENCES users (id),
    role         TEXT NOT NULL CHECK (role IN ('owner', 'manager', 'cashier', 'read_only')),
    created_at   BIGINT NOT NULL,
    PRIMARY KEY (merchant_id, user_id)
);
CREATE INDEX memberships_user ON memberships (user_id);

CREATE TABLE sessions (
    -- Hex SHA-256 of the cookie's token: a database leak gives no usable session.
    id            TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL REFERENCES users (id),
    merchant_id   TEXT NOT NULL REFERENCES merchants (id),
    -- The synchronizer token every form of this session carries.
    csrf_token    TEXT NOT NULL,
    -- The dashboard's test/live switch.
    environment   TEXT NOT NULL CHECK (environment IN ('test', 'live')),
    ip            TEXT,
    created_at    BIGINT NOT NULL,
    last_seen_at  BIGINT NOT NULL,
    -- Absolute end, whatever the activity.
    expires_at    BIGINT NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_expiry ON sessions (expires_at);

CREATE TABLE invitations (
    id           TEXT PRIMARY KEY,
    merchant_id  TEXT NOT NULL REFERENCES merchants (id),
    email        TEXT NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('owner', 'manager', 'cashier', 'read_only')),
    -- Hex SHA-256 of the link's token, which is shown once.
    token_hash   TEXT NOT NULL UNIQUE,
    invited_by   TEXT NOT NULL REFERENCES users (id),
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL,
    accepted_at  BIGINT,
    accepted_by  TEXT REFERENCES users (id),
    revoked_at   BIGINT
);
CREATE INDEX invitations_merchant ON invitations (merchant_id, created_at);

-- Failed sign-ins per account ('email:…') and per address ('ip:…'), shared by every gateway.
CREATE TABLE sign_in_failures (
    key           TEXT PRIMARY KEY,
    failures      BIGINT NOT NULL,
    window_start  BIGINT NOT NULL,
    locked_until  BIGINT
);

CREATE TABLE audit_log (
    -- Time-ordered (UUIDv7): pages list by id.
    id           TEXT PRIMARY KEY,
    merchant_id  TEXT NOT NULL REFERENCES merchants (id),
    -- 'user', 'api_key' or 'system'.
    actor_kind   TEXT NOT NULL CHECK (actor_kind IN ('user', 'api_key', 'system')),
    actor_id     TEXT,
    -- What a person reads: an e-mail, a key prefix, "system".
    actor_label  TEXT NOT NULL,
    -- e.g. 'credential.create', 'team.invite', 'session.sign_in'.
    action       TEXT NOT NULL,
    target_kind  TEXT,
    target_id    TEXT,
    -- Never a secret.
    summary      TEXT NOT NULL,
    ip           TEXT,
    environment  TEXT,
    created_at   BIGINT NOT NULL
);
CREATE INDEX audit_log_merchant ON audit_log (merchant_id, id);
CREATE INDEX audit_log_action ON audit_log (merchant_id, action, id);
