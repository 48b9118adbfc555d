-- The adapters' cache, durable: entries outlive restarts and are shared by every gateway on the
-- database. Values are sealed by the vault (they may be OAuth tokens).
CREATE TABLE adapter_cache (
    -- <provider>/<credential id>: one credential never reads another's entries.
    scope       TEXT NOT NULL,
    key         TEXT NOT NULL,
    value       TEXT NOT NULL,
    expires_at  BIGINT NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE INDEX adapter_cache_expiry ON adapter_cache (expires_at);
