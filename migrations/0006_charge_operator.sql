-- Who made a charge from the dashboard (its operator), so a cashier sees only their own sales.
-- NULL for charges created through the API.

ALTER TABLE charges ADD COLUMN operator_id TEXT REFERENCES users (id);

-- A cashier's list: their charges, newest first.
CREATE INDEX charges_operator ON charges (merchant_id, environment, operator_id, id);
