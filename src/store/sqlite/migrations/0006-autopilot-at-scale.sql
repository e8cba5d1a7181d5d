-- The autopilot's questions cost what needs action, not what the store holds (docs/PERFORMANCE.md,
-- "Autopilot pass"). A claimed ticket asks nothing more of its attesters (the ticket keeps who attested,
-- already_attested_nodes): a claim now deletes its requests. These are the ones earlier claims left; the
-- open ones among them (requested attesters that never attested) stayed in attestation_requests_open,
-- and every pass read them, for ever.
DELETE FROM attestation_requests
  WHERE stack_small_id IN (SELECT stack_small_id FROM stack_settlement_tickets WHERE is_claimed = 1);

-- The open requests of a node in the order the autopilot reads them (stack, then slot): the index alone
-- answers its question, sorted, so no plan prefers walking the whole table in key order.
DROP INDEX attestation_requests_open;
CREATE INDEX attestation_requests_open ON attestation_requests (node_small_id, stack_small_id, slot)
  WHERE attested = 0;
