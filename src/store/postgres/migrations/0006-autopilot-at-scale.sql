-- The autopilot's questions cost what needs action, not what the store holds (docs/PERFORMANCE.md,
-- "Autopilot pass"). The same change as migrations/sqlite/0006-autopilot-at-scale.sql: a claimed ticket
-- asks nothing more of its attesters (the ticket keeps who attested), a claim now deletes its requests,
-- and these are the ones earlier claims left; the open ones among them stayed in
-- attestation_requests_open, and every pass read them, for ever.
DELETE FROM attestation_requests r USING stack_settlement_tickets t
  WHERE t.stack_small_id = r.stack_small_id AND t.is_claimed;

-- The open requests of a node in the order the autopilot reads them (stack, then slot): the index alone
-- answers its question, sorted, so no plan prefers walking the whole table in key order (PostgreSQL's
-- generic plan did, expecting a node to hold a sixth of the requests).
DROP INDEX attestation_requests_open;
CREATE INDEX attestation_requests_open ON attestation_requests (node_small_id, stack_small_id, slot)
  WHERE NOT attested;
