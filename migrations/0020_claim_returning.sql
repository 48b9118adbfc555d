-- The delivery worker's claim now returns the rows it leased on both backends (SQLite's
-- `UPDATE … RETURNING`, as PostgreSQL's did): nothing reads deliveries by their lease's owner,
-- and every claim and attempt wrote an entry in this index.
DROP INDEX webhook_deliveries_lease_owner;
