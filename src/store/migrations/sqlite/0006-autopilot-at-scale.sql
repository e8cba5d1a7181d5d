-- The autopilot's questions cost what needs action, not what the store holds (docs/PERFORMANCE.md,
-- "Autopilot pass"). A claimed ticket asks nothing more of its attesters: a claim now deletes its
-- open requests. These are the ones earlier claims left, which the open-requests index
-- (attestation_requests_open) kept, and each pass read, for ever.
DELETE FROM attestation_requests WHERE attested = 0
  AND stack_small_id IN (SELECT stack_small_id FROM stack_settlement_tickets WHERE is_claimed = 1);
