-- Payment links: a merchant's public checkout pages (/p/<slug>) where anyone can pay by Pix,
-- and on charges the link each payment came through.

CREATE TABLE payment_links (
    id           TEXT PRIMARY KEY,
    merchant_id  TEXT NOT NULL REFERENCES merchants (id),
    -- The environment of the charges the link creates.
    environment  TEXT NOT NULL CHECK (environment IN ('test', 'live')),
    -- Lower case letters, digits and hyphens; one namespace for every merchant, as URLs are.
    slug         TEXT NOT NULL UNIQUE,
    -- Shown to the payer and sent to the PSP as the charge's description.
    name         TEXT NOT NULL,
    -- A fixed amount; NULL when the payer types it, within min_amount and max_amount if set.
    amount       BIGINT,
    min_amount   BIGINT,
    max_amount   BIGINT,
    -- Paid payments the link takes; NULL: no limit.
    usage_limit  BIGINT,
    -- The validity window, either end open when NULL.
    valid_from   BIGINT,
    valid_until  BIGINT,
    -- An adapter id, or 'random'.
    provider     TEXT NOT NULL,
    active       BIGINT NOT NULL DEFAULT 1,
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL,
    CHECK (amount IS NULL OR (min_amount IS NULL AND max_amount IS NULL))
);
-- A merchant's links, newest first.
CREATE INDEX payment_links_merchant ON payment_links (merchant_id, environment, id);

-- The link a charge was created through, and the link's name as the payer saw it then (the
-- charge and its events keep saying what was paid for even after the link is renamed).
ALTER TABLE charges ADD COLUMN payment_link_id TEXT REFERENCES payment_links (id);
ALTER TABLE charges ADD COLUMN payment_link_name TEXT;
-- A link's paid payments are counted on every charge it creates.
CREATE INDEX charges_payment_link ON charges (payment_link_id, status);
