DROP TABLE idem_records_audit;

COMMENT ON TABLE idem_records IS 'idem idempotency records; idem schema version 3';
