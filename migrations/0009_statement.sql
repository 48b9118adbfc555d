-- The statement: a merchant's paid charges of one environment by payment time. Partial, so it
-- holds only paid charges; the statement's queries name `status = 'paid'` literally to use it,
-- and page by (paid_at, id).

CREATE INDEX charges_statement ON charges (merchant_id, environment, paid_at, id)
    WHERE status = 'paid';
