-- Charges under faults: payments that arrive after the gateway closed a charge, and
-- idempotency locks that belong to one running request.

-- 1 when the payment arrived after the gateway had marked the charge expired or canceled (the
-- PSP still took the money): the charge is paid, and the merchant is told it came late.
ALTER TABLE charges ADD COLUMN paid_late BIGINT NOT NULL DEFAULT 0;

-- The request holding an idempotency key's lock: only it renews the lock, stores the answer
-- or releases it, so a request that outlived its lock cannot overwrite a retry's work.
ALTER TABLE idempotency_keys ADD COLUMN lock_owner TEXT;

-- The reconciler reads back the charges one claim leased by the claim's mark.
CREATE INDEX charges_check_lease ON charges (check_lease_owner);
