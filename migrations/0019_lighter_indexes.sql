-- A PSP notification that names its charge by the PSP's id (not by the gateway's reference) found
-- it with a scan of every charge. Only charges a PSP answered have that id.
CREATE INDEX charges_psp ON charges (credential_id, psp_id) WHERE psp_id IS NOT NULL;

-- Every charge written or moved also writes an entry in each index that holds it. These three
-- serve charges most never are (leased by a reconciler, made through a payment link, made by a
-- dashboard operator): each now holds only those, and the queries that read them name the
-- column with `=`, which implies it is not NULL on both backends.
DROP INDEX charges_check_lease;
CREATE INDEX charges_check_lease ON charges (check_lease_owner)
    WHERE check_lease_owner IS NOT NULL;
DROP INDEX charges_payment_link;
CREATE INDEX charges_payment_link ON charges (payment_link_id, status)
    WHERE payment_link_id IS NOT NULL;
DROP INDEX charges_operator;
CREATE INDEX charges_operator ON charges (merchant_id, environment, operator_id, id)
    WHERE operator_id IS NOT NULL;

-- The outbox: every delivery is written, leased and finished under load. The delivery worker's
-- claim reads per endpoint since 0018 (`webhook_deliveries_endpoint_due`), so the
-- (status, next_attempt_at) index serves no query and goes. A lease's rows are read back by
-- their owner: rows never leased need no entry there.
DROP INDEX webhook_deliveries_due;
DROP INDEX webhook_deliveries_lease_owner;
CREATE INDEX webhook_deliveries_lease_owner ON webhook_deliveries (lease_owner)
    WHERE lease_owner IS NOT NULL;
