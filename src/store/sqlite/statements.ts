import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { DISPUTE_COLUMNS, TERMS_COLUMNS, TICKET_COLUMNS } from '../rows.ts';
import { STACK_COLUMNS, STACK_STATE_COLUMNS } from '../stack-list/columns.ts';

/**
 * The SQLite store's statements, prepared once per connection: the reader's and the writer's, each a typed
 * object (a statement's name is a property, checked when the code is). SQLite's u64 columns hold an
 * INTEGER up to 2^53 - 1 and 20-digit TEXT above (u64.ts), and every query compares them as stored.
 */

/**
 * What the autopilot asks, exported for the test that checks each is one index range. Each names its index
 * (INDEXED BY): with the statistics PRAGMA optimize leaves, the planner would read a node's whole primary-key
 * range instead, a cost that grows with the store (DECISIONS.md, "Each autopilot question is one index range,
 * whatever the statistics").
 */
export const AUTOPILOT_QUERIES = {
  settleCandidates: `SELECT stack_small_id, ${TERMS_COLUMNS} FROM stacks INDEXED BY stacks_open_by_fill
      WHERE selected_node_id = ?1 AND in_settle_period = 0 AND is_claimed = 0 AND already_computed_units <> 0
        AND fill_ppm >= ?2
      UNION SELECT stack_small_id, ${TERMS_COLUMNS} FROM stacks INDEXED BY stacks_open_by_last_usage
      WHERE selected_node_id = ?1 AND in_settle_period = 0 AND is_claimed = 0
        AND last_usage_at IS NOT NULL AND last_usage_at < ?3
      ORDER BY stack_small_id`,
  oldestUsage: `SELECT min(last_usage_at) AS at FROM stacks INDEXED BY stacks_open_by_last_usage
      WHERE selected_node_id = ? AND in_settle_period = 0 AND is_claimed = 0 AND last_usage_at IS NOT NULL`,
  claimable: `SELECT t.stack_small_id, t.num_claimed_compute_units, t.claimable_from_epoch,
        s.price_per_one_million_compute_units, s.num_compute_units, s.security_level
      FROM stack_settlement_tickets t INDEXED BY stack_settlement_tickets_claimable
      LEFT JOIN stacks s ON s.stack_small_id = t.stack_small_id
      WHERE t.selected_node_id = ? AND t.is_claimed = 0 AND t.is_in_dispute = 0 AND t.claimable_from_epoch <= ?
      ORDER BY t.stack_small_id`,
  // CROSS JOIN keeps the requests the outer loop: each ticket is then one primary-key lookup.
  requests: `SELECT r.stack_small_id, r.slot, t.claimable_from_epoch AS until_epoch,
        t.is_in_dispute, h.stack_small_id IS NOT NULL AS has_record
      FROM attestation_requests r INDEXED BY attestation_requests_open
      CROSS JOIN stack_settlement_tickets t ON t.stack_small_id = r.stack_small_id
      LEFT JOIN stack_hashes h ON h.stack_small_id = r.stack_small_id
      WHERE r.node_small_id = ? AND r.attested = 0 AND t.is_claimed = 0
      ORDER BY r.stack_small_id, r.slot`,
} as const;

/** Every stack of a node with its ticket, then the node's tickets of stacks never seen. */
const LEDGER_QUERY = `SELECT s.stack_small_id, s.price_per_one_million_compute_units, s.num_compute_units,
    s.security_level, s.already_computed_units, s.is_claimed AS stack_claimed, t.stack_small_id AS t_stack_small_id,
    t.num_claimed_compute_units, t.is_in_dispute, t.is_claimed AS t_claimed, t.claimable_from_epoch,
    t.claimed_epoch, t.node_fee_amount, t.user_refund_amount
  FROM stacks s LEFT JOIN stack_settlement_tickets t ON t.stack_small_id = s.stack_small_id
  WHERE s.selected_node_id = ?1
  UNION ALL
  SELECT t.stack_small_id, NULL, NULL, NULL, NULL, t.is_claimed, t.stack_small_id,
    t.num_claimed_compute_units, t.is_in_dispute, t.is_claimed, t.claimable_from_epoch,
    t.claimed_epoch, t.node_fee_amount, t.user_refund_amount
  FROM stack_settlement_tickets t
  WHERE t.selected_node_id = ?1 AND NOT EXISTS (SELECT 1 FROM stacks s WHERE s.stack_small_id = t.stack_small_id)`;

/** Rows as arrays of values (a node's stack list is built from them: no object per row). */
function arrays(db: DatabaseSync, sql: string): StatementSync {
  const statement = db.prepare(sql);
  statement.setReturnArrays(true);
  return statement;
}

const STACKS_OF_NODE =
  'FROM stacks WHERE selected_node_id = ? AND stack_small_id > ? ORDER BY stack_small_id LIMIT ?';
// Like PostgreSQL's float8 arithmetic: zero capacity counts as full.
const FILLED_STACKS_OF_NODE = `FROM stacks WHERE selected_node_id = ?1
      AND (CAST(num_compute_units AS REAL) = 0
           OR CAST(already_computed_units AS REAL) / CAST(num_compute_units AS REAL) >= ?2)
      AND stack_small_id > ?3 ORDER BY stack_small_id LIMIT ?4`;

/** The reader connection's statements. */
export function readStatements(db: DatabaseSync) {
  return {
    // The lists take a page: rows after an id (-1: from the first, as INTEGER -1 sorts before every id)
    // and at most a number of them (-1: all).
    tasks: db.prepare('SELECT * FROM tasks WHERE task_small_id > ? ORDER BY task_small_id LIMIT ?'),
    subscriptions: db.prepare(
      'SELECT * FROM node_subscriptions WHERE node_small_id = ? AND task_small_id > ? ORDER BY task_small_id LIMIT ?',
    ),
    stacks: db.prepare(`SELECT ${STACK_COLUMNS} ${STACKS_OF_NODE}`),
    stacksFilled: db.prepare(`SELECT ${STACK_COLUMNS} ${FILLED_STACKS_OF_NODE}`),
    // The same as arrays for the stack lists (stack-list/), whole or only the columns that change.
    stacksArrays: arrays(db, `SELECT ${STACK_COLUMNS} ${STACKS_OF_NODE}`),
    stacksFilledArrays: arrays(db, `SELECT ${STACK_COLUMNS} ${FILLED_STACKS_OF_NODE}`),
    stacksState: arrays(db, `SELECT ${STACK_STATE_COLUMNS} ${STACKS_OF_NODE}`),
    stacksFilledState: arrays(db, `SELECT ${STACK_STATE_COLUMNS} ${FILLED_STACKS_OF_NODE}`),
    stackArrays: arrays(db, `SELECT ${STACK_COLUMNS} FROM stacks WHERE stack_small_id = ?`),
    stackState: arrays(db, `SELECT ${STACK_STATE_COLUMNS} FROM stacks WHERE stack_small_id = ?`),
    claimed: db.prepare(`SELECT ${TICKET_COLUMNS} FROM stack_settlement_tickets
      WHERE selected_node_id = ? AND is_claimed = 1 AND stack_small_id > ? ORDER BY stack_small_id LIMIT ?`),
    disputesAgainst: db.prepare(`SELECT ${DISPUTE_COLUMNS} FROM stack_attestation_disputes
      WHERE original_node_id = ? AND stack_small_id > ? ORDER BY stack_small_id, attestation_node_id LIMIT ?`),
    disputesOwn: db.prepare(`SELECT ${DISPUTE_COLUMNS} FROM stack_attestation_disputes
      WHERE attestation_node_id = ? AND stack_small_id > ? ORDER BY stack_small_id LIMIT ?`),
    topicVersion: db.prepare('SELECT version FROM topic_versions WHERE topic = ?'),
    storeId: db.prepare('SELECT store_id FROM store_identity WHERE id = 1'),
    getCursor: db.prepare('SELECT * FROM indexer_cursors WHERE source = ?'),
    getStackHash: db.prepare('SELECT total_hash, num_requests FROM stack_hashes WHERE stack_small_id = ?'),
    getTask: db.prepare('SELECT * FROM tasks WHERE task_small_id = ?'),
    getNode: db.prepare('SELECT node_small_id, badge_id, sui_address FROM nodes WHERE node_small_id = ?'),
    nodeNamed: db.prepare(`SELECT 1 AS named FROM node_subscriptions WHERE node_small_id = ?
      UNION ALL SELECT 1 FROM stacks WHERE selected_node_id = ? LIMIT 1`),
    getStack: db.prepare(`SELECT ${STACK_COLUMNS} FROM stacks WHERE stack_small_id = ?`),
    getSubscription: db.prepare(
      'SELECT * FROM node_subscriptions WHERE node_small_id = ? AND task_small_id = ?',
    ),
    eligibleSubscribers: db.prepare(`SELECT count(*) AS n FROM node_subscriptions WHERE task_small_id = ?
      AND valid = 1 AND price_per_one_million_compute_units <= ? AND max_num_compute_units >= ?`),
    getTicket: db.prepare(`SELECT ${TICKET_COLUMNS} FROM stack_settlement_tickets WHERE stack_small_id = ?`),
    hasEvent: db.prepare('SELECT 1 FROM applied_events WHERE event_key = ?'),
    hasStack: db.prepare('SELECT 1 FROM stacks WHERE stack_small_id = ?'),
    chainState: db.prepare('SELECT epoch, parameters FROM chain_state WHERE id = 1'),
    stackTerms: db.prepare(`SELECT selected_node_id, ${TERMS_COLUMNS} FROM stacks WHERE stack_small_id = ?`),
    ledger: db.prepare(LEDGER_QUERY),
    rewards: db.prepare(
      'SELECT * FROM attester_rewards WHERE node_small_id = ? ORDER BY stack_small_id, slot',
    ),
    settleCandidates: db.prepare(AUTOPILOT_QUERIES.settleCandidates),
    // The open stacks the usage source follows: with usage, from the autopilot's index; without, the node's
    // range after an id (-1: all of it).
    followedStacks:
      db.prepare(`SELECT stack_small_id, already_computed_units, num_total_messages, num_compute_units
        FROM stacks INDEXED BY stacks_open_by_last_usage
        WHERE selected_node_id = ?1 AND in_settle_period = 0 AND is_claimed = 0 AND last_usage_at IS NOT NULL
      UNION ALL SELECT stack_small_id, already_computed_units, num_total_messages, num_compute_units FROM stacks
        WHERE selected_node_id = ?1 AND stack_small_id > ?2 AND in_settle_period = 0 AND is_claimed = 0
          AND last_usage_at IS NULL`),
    oldestUsage: db.prepare(AUTOPILOT_QUERIES.oldestUsage),
    claimable: db.prepare(AUTOPILOT_QUERIES.claimable),
    requests: db.prepare(AUTOPILOT_QUERIES.requests),
    actions: db.prepare('SELECT * FROM autopilot_actions ORDER BY id DESC LIMIT ?'),
    spending: db.prepare(`SELECT at, node_small_id, status, gas_estimate, gas_used FROM autopilot_actions
      WHERE at >= ? AND status IN ('pending', 'succeeded', 'failed') ORDER BY at`),
    pendingActions: db.prepare(
      "SELECT * FROM autopilot_actions WHERE status = 'pending' ORDER BY id DESC LIMIT ?",
    ),
    dataVersion: db.prepare('PRAGMA data_version'),
    // Node ids come as a JSON array of decimal strings, matched as the column stores them (INTEGER up to
    // 2^53 - 1, 20-digit TEXT above).
    nodeEvents: db.prepare(`SELECT * FROM node_events WHERE id > ?
        AND (? IS NULL OR node_small_id IS NULL
          OR node_small_id IN (SELECT CASE WHEN length(value) < 20 THEN CAST(value AS INTEGER) ELSE value END FROM json_each(?))
          OR other_node_small_id IN (SELECT CASE WHEN length(value) < 20 THEN CAST(value AS INTEGER) ELSE value END FROM json_each(?)))
        AND (? IS NULL OR type IN (SELECT value FROM json_each(?)))
      ORDER BY id LIMIT ?`),
    nodeEventBounds: db.prepare(`SELECT (SELECT min(id) FROM node_events) AS oldest,
      coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'node_events'), 0) AS newest`),
  };
}

export type ReadStatements = ReturnType<typeof readStatements>;

/** The writer connection's statements (reads inside a write transaction see its own writes). */
export function writeStatements(db: DatabaseSync) {
  return {
    getUsage:
      db.prepare(`SELECT stack_small_id, selected_node_id, num_compute_units, already_computed_units, num_total_messages FROM stacks
      WHERE stack_small_id = ?`),
    setUsage: db.prepare(`UPDATE stacks SET already_computed_units = ?, num_total_messages = ?, fill_ppm = ?,
      last_usage_at = ? WHERE stack_small_id = ?`),
    // The usage source's mirror (usage.ts): the row it decides from, and what it sets.
    mirrorRow: db.prepare(`SELECT stack_small_id, selected_node_id, num_compute_units, already_computed_units,
      num_total_messages, in_settle_period, is_claimed, fill_ppm, fill_peak_ppm FROM stacks WHERE stack_small_id = ?`),
    setMirrored:
      db.prepare(`UPDATE stacks SET already_computed_units = ?, num_total_messages = ?, fill_ppm = ?,
      fill_peak_ppm = ?, last_usage_at = ? WHERE stack_small_id = ?`),
    getStackHash: db.prepare('SELECT total_hash, num_requests FROM stack_hashes WHERE stack_small_id = ?'),
    putStackHash:
      db.prepare(`INSERT INTO stack_hashes VALUES (?, ?, ?) ON CONFLICT (stack_small_id) DO UPDATE SET
      total_hash = excluded.total_hash, num_requests = excluded.num_requests`),
    expireIdempotency: db.prepare('DELETE FROM idempotency_keys WHERE created_at < ?'),
    getIdempotency: db.prepare('SELECT * FROM idempotency_keys WHERE key = ?'),
    reserveIdempotency: db.prepare(
      'INSERT INTO idempotency_keys (key, request_hash, status, created_at) VALUES (?, ?, 0, ?)',
    ),
    completeIdempotency: db.prepare('UPDATE idempotency_keys SET status = ?, response = ? WHERE key = ?'),
    releaseIdempotency: db.prepare('DELETE FROM idempotency_keys WHERE key = ? AND status = 0'),
    claimEvent: db.prepare('INSERT OR IGNORE INTO applied_events (event_key) VALUES (?)'),
    putTask: db.prepare(`INSERT INTO tasks (task_small_id, task_id, role, model_name, security_level,
      minimum_reputation_score) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`),
    deprecateTask: db.prepare(
      'UPDATE tasks SET is_deprecated = 1, deprecated_at_epoch = ? WHERE task_small_id = ?',
    ),
    removeTask: db.prepare(
      'UPDATE tasks SET is_deprecated = 1, is_removed = 1, removed_at_epoch = ? WHERE task_small_id = ?',
    ),
    invalidateSubscriptions: db.prepare('UPDATE node_subscriptions SET valid = 0 WHERE task_small_id = ?'),
    subscribersOf: db.prepare('SELECT node_small_id FROM node_subscriptions WHERE task_small_id = ?'),
    bumpTopic: db.prepare(`INSERT INTO topic_versions (topic, version) VALUES (?, 1)
      ON CONFLICT (topic) DO UPDATE SET version = version + 1 RETURNING version`),
    chainState: db.prepare('SELECT epoch, parameters FROM chain_state WHERE id = 1'),
    putNode: db.prepare('INSERT INTO nodes VALUES (?, ?, ?) ON CONFLICT DO NOTHING'),
    putNodeModel: db.prepare(`INSERT INTO node_models VALUES (?, ?, ?)
      ON CONFLICT (node_small_id, model_name) DO UPDATE SET echelon_id = excluded.echelon_id`),
    putSubscription: db.prepare(`INSERT INTO node_subscriptions (node_small_id, task_small_id,
      price_per_one_million_compute_units, max_num_compute_units, valid) VALUES (?, ?, ?, ?, 1)
      ON CONFLICT (node_small_id, task_small_id) DO UPDATE SET
        price_per_one_million_compute_units = excluded.price_per_one_million_compute_units,
        max_num_compute_units = excluded.max_num_compute_units, valid = 1`),
    deleteSubscription: db.prepare(
      'DELETE FROM node_subscriptions WHERE node_small_id = ? AND task_small_id = ?',
    ),
    putStack:
      db.prepare(`INSERT INTO stacks (selected_node_id, stack_small_id, stack_id, owner_address, task_small_id,
      num_compute_units, price_per_one_million_compute_units, is_confidential, security_level)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, coalesce((SELECT security_level = 1 FROM tasks WHERE task_small_id = ?5), 0),
        (SELECT security_level FROM tasks WHERE task_small_id = ?5))
      ON CONFLICT DO NOTHING`),
    putTicket: db.prepare(`INSERT INTO stack_settlement_tickets (stack_small_id, selected_node_id,
      num_claimed_compute_units, requested_attestation_nodes, committed_stack_proofs, stack_merkle_leaves,
      settled_epoch, claimable_from_epoch) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`),
    putRequest: db.prepare(`INSERT INTO attestation_requests (stack_small_id, slot, node_small_id)
      VALUES (?, ?, ?) ON CONFLICT DO NOTHING`),
    requestAttested: db.prepare(
      'UPDATE attestation_requests SET attested = 1 WHERE stack_small_id = ? AND node_small_id = ?',
    ),
    closeRequests: db.prepare('DELETE FROM attestation_requests WHERE stack_small_id = ?'),
    retireRequests: db.prepare(
      'DELETE FROM attestation_requests WHERE node_small_id = ? AND stack_small_id = ? AND attested = 0',
    ),
    stackTerms: db.prepare(`SELECT selected_node_id, ${TERMS_COLUMNS} FROM stacks WHERE stack_small_id = ?`),
    putReward: db.prepare(`INSERT INTO attester_rewards (stack_small_id, slot, node_small_id, amount, epoch)
      VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`),
    saveChainState:
      db.prepare(`INSERT INTO chain_state (id, epoch, parameters, updated_at) VALUES (1, ?, ?, ?)
      ON CONFLICT (id) DO UPDATE SET epoch = coalesce(excluded.epoch, epoch),
        parameters = coalesce(excluded.parameters, parameters), updated_at = excluded.updated_at`),
    insertAction:
      db.prepare(`INSERT INTO autopilot_actions (at, updated_at, kind, node_small_id, stack_small_ids,
      status, reason, node_fee_amount, gas_estimate, tx_digests, error, gas_used)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
      RETURNING *`),
    updateAction:
      db.prepare(`UPDATE autopilot_actions SET status = ?, tx_digests = ?, error = ?, updated_at = ?,
      node_fee_amount = coalesce(?, node_fee_amount), gas_used = coalesce(?, gas_used) WHERE id = ? RETURNING *`),
    firstEventSince: db.prepare('SELECT id FROM node_events WHERE at >= ? ORDER BY id LIMIT 1'),
    newestEventId: db.prepare('SELECT max(id) AS id FROM node_events'),
    pruneEvents: db.prepare('DELETE FROM node_events WHERE id < ?'),
    becomingClaimable: db.prepare(`SELECT t.stack_small_id, t.selected_node_id, t.num_claimed_compute_units,
        t.claimable_from_epoch, s.price_per_one_million_compute_units, s.num_compute_units, s.security_level
      FROM stack_settlement_tickets t LEFT JOIN stacks s ON s.stack_small_id = t.stack_small_id
      WHERE t.is_claimed = 0 AND t.is_in_dispute = 0 AND t.claimable_from_epoch > ? AND t.claimable_from_epoch <= ?
      ORDER BY t.stack_small_id`),
    markSettling: db.prepare('UPDATE stacks SET in_settle_period = 1 WHERE stack_small_id = ?'),
    getTicket:
      db.prepare(`SELECT selected_node_id, requested_attestation_nodes, stack_merkle_leaves, already_attested_nodes
      FROM stack_settlement_tickets WHERE stack_small_id = ?`),
    attest:
      db.prepare(`UPDATE stack_settlement_tickets SET stack_merkle_leaves = ?, already_attested_nodes = ?
      WHERE stack_small_id = ?`),
    settleTicket: db.prepare(`INSERT INTO stack_settlement_tickets (stack_small_id, selected_node_id,
      num_claimed_compute_units, requested_attestation_nodes, committed_stack_proofs, dispute_settled_at_epoch)
      VALUES (?, ?, ?, ?, ?, ?)
      ON CONFLICT (stack_small_id) DO UPDATE SET dispute_settled_at_epoch = excluded.dispute_settled_at_epoch`),
    claimTicket: db.prepare(`INSERT INTO stack_settlement_tickets (stack_small_id, selected_node_id,
      num_claimed_compute_units, requested_attestation_nodes, user_refund_amount, claim_path, claimed_epoch,
      node_fee_amount, is_claimed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1)
      ON CONFLICT (stack_small_id) DO UPDATE SET is_claimed = 1, user_refund_amount = excluded.user_refund_amount,
        num_claimed_compute_units = excluded.num_claimed_compute_units, claim_path = excluded.claim_path,
        claimed_epoch = excluded.claimed_epoch, node_fee_amount = excluded.node_fee_amount`),
    markStackClaimed: db.prepare(
      'UPDATE stacks SET is_claimed = 1, user_refund_amount = ? WHERE stack_small_id = ?',
    ),
    putDispute: db.prepare(
      'INSERT INTO stack_attestation_disputes VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
    ),
    disputedTicket: db.prepare(`SELECT requested_attestation_nodes, already_attested_nodes, is_in_dispute,
      claimable_from_epoch FROM stack_settlement_tickets WHERE stack_small_id = ?`),
    disputeAttested: db.prepare(
      'UPDATE stack_settlement_tickets SET already_attested_nodes = ? WHERE stack_small_id = ?',
    ),
    markInDispute: db.prepare(
      'UPDATE stack_settlement_tickets SET is_in_dispute = 1 WHERE stack_small_id = ?',
    ),
    saveCursor: db.prepare(`INSERT INTO indexer_cursors (source, cursor, applied, duplicate, ignored, unknown,
      malformed, orphaned, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT (source) DO UPDATE SET cursor = excluded.cursor, applied = applied + excluded.applied,
        duplicate = duplicate + excluded.duplicate, ignored = ignored + excluded.ignored,
        unknown = unknown + excluded.unknown, malformed = malformed + excluded.malformed,
        orphaned = orphaned + excluded.orphaned, updated_at = excluded.updated_at`),
  };
}

export type WriteStatements = ReturnType<typeof writeStatements>;
