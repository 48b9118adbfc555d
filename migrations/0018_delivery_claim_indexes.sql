-- The delivery worker's claim reads, per enabled endpoint, its first due deliveries and its
-- deliveries in flight: both are index range scans, so a claim costs the same with a backlog of
-- thousands of pending deliveries as with none. The (endpoint_id, status) index is a prefix of
-- the first and goes. The rows a claim leased are read back by their lease owner.
DROP INDEX webhook_deliveries_endpoint;
CREATE INDEX webhook_deliveries_endpoint_due
    ON webhook_deliveries (endpoint_id, status, next_attempt_at, id);
CREATE INDEX webhook_deliveries_in_flight
    ON webhook_deliveries (endpoint_id, lease_until) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_lease_owner ON webhook_deliveries (lease_owner);
