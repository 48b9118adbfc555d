-- The delivery worker counts the attempts in flight per endpoint when it claims (so one slow
-- endpoint cannot take every worker), and deleting or disabling an endpoint cancels its
-- pending deliveries: both look deliveries up by endpoint.
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, status);
