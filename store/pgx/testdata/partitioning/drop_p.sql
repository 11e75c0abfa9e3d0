
SELECT count(*) AS not_prunable FROM p_0 WHERE NOT (status = 'expired' AND expires_at <= statement_timestamp());
ALTER TABLE p DETACH PARTITION p_0;
DROP TABLE p_0;
