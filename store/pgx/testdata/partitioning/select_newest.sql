\set n random(@LO@, @HI@)
SELECT status, token, version, response_status, response_body, expires_at FROM @SCHEMA@.@T@ WHERE tenant = '' AND principal = 'merchant_' || (:n % 1000) AND use_case = 'payments.create' AND idem_key = md5(:n::text) ORDER BY created_at DESC LIMIT 1;
