-- The autopilot's questions cost what needs action, not what the store holds (docs/PERFORMANCE.md,
-- "Autopilot pass"). The same change as migrations/sqlite/0006-autopilot-at-scale.sql: a claimed ticket
-- asks nothing more of its attesters (the ticket keeps who attested), a claim now deletes its requests,
-- and these are the ones earlier claims left; the open ones among them stayed in
-- attestation_requests_open, and every pass read them, for ever.
DELETE FROM attestation_requests r USING stack_settlement_tickets t
  WHERE t.stack_small_id = r.stack_small_id AND t.is_claimed;
