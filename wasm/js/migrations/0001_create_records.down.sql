-- Drops every record and the token sequence: a later up starts tokens at 1
-- again, so never run this on a database whose clients may still hold tokens.
DROP FUNCTION IF EXISTS idem_records_reserve;
DROP FUNCTION IF EXISTS idem_records_load;
DROP TABLE IF EXISTS idem_records;
DROP SEQUENCE IF EXISTS idem_records_token_seq;
