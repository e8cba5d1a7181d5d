-- The node's money: what each stack pays and when it can be claimed, attester rewards, the chain's
-- epoch and fee parameters as indexed, and the autopilot's record of what it did. The same tables,
-- columns and indexes as migrations/sqlite/0003-earnings-and-autopilot.sql.

ALTER TABLE stacks ADD COLUMN security_level INTEGER;
ALTER TABLE stacks ADD COLUMN last_usage_at BIGINT;
ALTER TABLE stacks ADD COLUMN fill_ppm INTEGER NOT NULL DEFAULT 0;
UPDATE stacks SET security_level = t.security_level FROM tasks t WHERE t.task_small_id = stacks.task_small_id;
UPDATE stacks SET fill_ppm = CASE WHEN num_compute_units = 0 THEN 1000000
  ELSE least(1000000, floor(already_computed_units * 1000000 / num_compute_units))::integer END
  WHERE already_computed_units > 0 OR num_compute_units = 0;
CREATE INDEX stacks_open_by_fill ON stacks (selected_node_id, fill_ppm)
  WHERE NOT in_settle_period AND NOT is_claimed;
CREATE INDEX stacks_open_by_last_usage ON stacks (selected_node_id, last_usage_at)
  WHERE NOT in_settle_period AND NOT is_claimed AND last_usage_at IS NOT NULL;

ALTER TABLE stack_settlement_tickets ADD COLUMN settled_epoch u64;
ALTER TABLE stack_settlement_tickets ADD COLUMN claimable_from_epoch u64;
ALTER TABLE stack_settlement_tickets ADD COLUMN claimed_epoch u64;
ALTER TABLE stack_settlement_tickets ADD COLUMN node_fee_amount u64;
CREATE INDEX stack_settlement_tickets_claimable ON stack_settlement_tickets
  (selected_node_id, claimable_from_epoch) WHERE NOT is_claimed AND NOT is_in_dispute;
CREATE INDEX stack_settlement_tickets_by_node ON stack_settlement_tickets (selected_node_id, stack_small_id);

CREATE TABLE attestation_requests (
  stack_small_id u64 NOT NULL,
  slot INTEGER NOT NULL,
  node_small_id u64 NOT NULL,
  attested BOOLEAN NOT NULL DEFAULT false,
  PRIMARY KEY (stack_small_id, slot)
);
CREATE INDEX attestation_requests_open ON attestation_requests (node_small_id, stack_small_id)
  WHERE NOT attested;

CREATE TABLE attester_rewards (
  stack_small_id u64 NOT NULL,
  slot INTEGER NOT NULL,
  node_small_id u64 NOT NULL,
  amount u64 NOT NULL,
  epoch u64,
  PRIMARY KEY (stack_small_id, slot)
);
CREATE INDEX attester_rewards_by_node ON attester_rewards (node_small_id);

CREATE TABLE chain_state (
  id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
  epoch u64,
  parameters TEXT,
  updated_at TEXT NOT NULL
);

CREATE TABLE autopilot_actions (
  id BIGSERIAL PRIMARY KEY,
  at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL,
  kind TEXT NOT NULL,
  node_small_id u64 NOT NULL,
  stack_small_ids TEXT NOT NULL,
  status TEXT NOT NULL,
  reason TEXT NOT NULL,
  node_fee_amount u64,
  gas_estimate u64,
  tx_digests TEXT NOT NULL DEFAULT '[]',
  error TEXT
);
CREATE INDEX autopilot_actions_pending ON autopilot_actions (id) WHERE status = 'pending';
