-- The PSPs page: how trying a credential at its PSP went when its fields were last saved, so
-- the merchant sees it is verified.

-- JSON {status: ok | unreachable | unsupported | skipped, message?, at}; NULL for credentials
-- saved before this column existed.
ALTER TABLE credentials ADD COLUMN verification TEXT;
