-- The autopilot's questions cost what needs action, not what the store holds (docs/PERFORMANCE.md,
-- "Autopilot pass"). The same change as migrations/sqlite/0006-autopilot-at-scale.sql: a claimed ticket
-- asks nothing more of its attesters, a claim now deletes its open requests, and these are the ones
-- earlier claims left, which the open-requests index (attestation_requests_open) kept for ever.
DELETE FROM attestation_requests r USING stack_settlement_tickets t
  WHERE NOT r.attested AND t.stack_small_id = r.stack_small_id AND t.is_claimed;
