-- The node's money: what each stack pays and when it can be claimed, attester rewards, the chain's
-- epoch and fee parameters as indexed, and the autopilot's record of what it did.

-- The task's security level, copied when the stack is indexed (null when the task was never seen): it
-- decides the fee formula. last_usage_at: when usage was last reported (ms), for the idle rule.
-- fill_ppm: floor(already_computed_units x 1e6 / num_compute_units), kept with the usage, so that the
-- stacks at or above a fill threshold are one index range.
ALTER TABLE stacks ADD COLUMN security_level INTEGER;
ALTER TABLE stacks ADD COLUMN last_usage_at INTEGER;
ALTER TABLE stacks ADD COLUMN fill_ppm INTEGER NOT NULL DEFAULT 0;
UPDATE stacks SET security_level = (SELECT security_level FROM tasks WHERE tasks.task_small_id = stacks.task_small_id);
UPDATE stacks SET fill_ppm = CASE WHEN CAST(num_compute_units AS REAL) = 0 THEN 1000000
  ELSE min(1000000, CAST(CAST(already_computed_units AS REAL) * 1000000 / CAST(num_compute_units AS REAL) AS INTEGER)) END;
-- The open stacks of a node (neither settled nor claimed), by fill and by last usage.
CREATE INDEX stacks_open_by_fill ON stacks (selected_node_id, fill_ppm)
  WHERE in_settle_period = 0 AND is_claimed = 0;
CREATE INDEX stacks_open_by_last_usage ON stacks (selected_node_id, last_usage_at)
  WHERE in_settle_period = 0 AND is_claimed = 0 AND last_usage_at IS NOT NULL;

-- settled_epoch: the epoch of the try-settle; claimable_from_epoch: settled_epoch + 1 (contracts.md
-- §3.5); claimed_epoch: the epoch of the claim; node_fee_amount: what the claim paid the node (null
-- when the stack's price or level was never seen).
ALTER TABLE stack_settlement_tickets ADD COLUMN settled_epoch ANY;
ALTER TABLE stack_settlement_tickets ADD COLUMN claimable_from_epoch ANY;
ALTER TABLE stack_settlement_tickets ADD COLUMN claimed_epoch ANY;
ALTER TABLE stack_settlement_tickets ADD COLUMN node_fee_amount ANY;
-- Tickets a node can claim once their epoch comes: one index range per node.
CREATE INDEX stack_settlement_tickets_claimable ON stack_settlement_tickets
  (selected_node_id, claimable_from_epoch) WHERE is_claimed = 0 AND is_in_dispute = 0;
-- All tickets of a node, for its earnings.
CREATE INDEX stack_settlement_tickets_by_node ON stack_settlement_tickets (selected_node_id, stack_small_id);

-- One row per requested attester slot of a ticket (a node listed twice has two): whom to ask, and
-- whether it has attested.
CREATE TABLE attestation_requests (
  stack_small_id ANY NOT NULL,
  slot INTEGER NOT NULL,
  node_small_id ANY NOT NULL,
  attested INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (stack_small_id, slot)
) STRICT, WITHOUT ROWID;
CREATE INDEX attestation_requests_open ON attestation_requests (node_small_id, stack_small_id)
  WHERE attested = 0;

-- What a claim credited each requested attester that had attested: fee / k (contracts.md §2.9).
CREATE TABLE attester_rewards (
  stack_small_id ANY NOT NULL,
  slot INTEGER NOT NULL,
  node_small_id ANY NOT NULL,
  amount ANY NOT NULL,
  epoch ANY,
  PRIMARY KEY (stack_small_id, slot)
) STRICT, WITHOUT ROWID;
CREATE INDEX attester_rewards_by_node ON attester_rewards (node_small_id);

-- The chain as last indexed: its epoch, and the AtomaDb fee parameters (JSON of decimal strings).
-- One row; epochs pass and parameters change without events.
CREATE TABLE chain_state (
  id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
  epoch ANY,
  parameters TEXT,
  updated_at TEXT NOT NULL
) STRICT;

-- What the autopilot did or decided not to do, with why: pending rows are submissions whose outcome
-- is not known yet (a crash between submitting and recording leaves one, resolved at restart).
CREATE TABLE autopilot_actions (
  id INTEGER PRIMARY KEY,
  at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  kind TEXT NOT NULL,
  node_small_id ANY NOT NULL,
  stack_small_ids TEXT NOT NULL,
  status TEXT NOT NULL,
  reason TEXT NOT NULL,
  node_fee_amount ANY,
  gas_estimate ANY,
  tx_digests TEXT NOT NULL DEFAULT '[]',
  error TEXT
) STRICT;
CREATE INDEX autopilot_actions_pending ON autopilot_actions (id) WHERE status = 'pending';
