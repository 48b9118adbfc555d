-- Sale evidence: a photo and where the sale happened, attached to a paid charge. The photo
-- itself lives outside the database (a directory or S3-compatible storage, under
-- `storage_key`); this row is what the gateway knows about it. Rows go at `expires_at`
-- (180 days after `created_at`, both the server's clock), with their photo.

CREATE TABLE charge_evidence (
    id             TEXT PRIMARY KEY,
    charge_id      TEXT NOT NULL REFERENCES charges (id),
    merchant_id    TEXT NOT NULL REFERENCES merchants (id),
    environment    TEXT NOT NULL CHECK (environment IN ('test', 'live')),
    -- Where the photo is kept in the evidence storage.
    storage_key    TEXT NOT NULL UNIQUE,
    -- Of the stored (re-encoded) photo.
    content_type   TEXT NOT NULL,
    byte_size      BIGINT NOT NULL,
    width          BIGINT NOT NULL,
    height         BIGINT NOT NULL,
    sha256         TEXT NOT NULL,
    -- Degrees (WGS 84) and metres, as the browser's geolocation gives them; or a typed address.
    latitude       DOUBLE PRECISION,
    longitude      DOUBLE PRECISION,
    accuracy       DOUBLE PRECISION,
    address        TEXT,
    -- 'user' or 'api_key', its id, and what a person reads (an e-mail, a key prefix).
    uploaded_by_kind  TEXT NOT NULL,
    uploaded_by_id    TEXT,
    uploaded_by_label TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL,
    CHECK ((latitude IS NULL) = (longitude IS NULL))
);
-- A charge's evidence, oldest first.
CREATE INDEX charge_evidence_charge ON charge_evidence (charge_id, id);
-- The sweeper's work.
CREATE INDEX charge_evidence_expiry ON charge_evidence (expires_at);
