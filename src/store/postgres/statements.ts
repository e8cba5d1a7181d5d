import { DISPUTE_COLUMNS, TERMS_COLUMNS, TICKET_COLUMNS } from '../rows.ts';
import { STACK_COLUMNS, STACK_STATE_COLUMNS } from '../stack-list/columns.ts';

/**
 * The PostgreSQL store's statements, each named (S.<name>): pg prepares one once per pooled connection and
 * then only binds and executes it. u64 columns are NUMERIC(20,0) in a checked domain, bound and read as
 * decimal text (u64.ts).
 */

/**
 * A named statement: pg prepares it once per pooled connection and then only binds and executes it. A
 * parameter used both as a u64 column value and in a comparison is cast to numeric in both places, or
 * PostgreSQL deduces two types for it (the u64 domain and numeric).
 */
export interface Statement {
  name: string;
  text: string;
}

function statements<K extends string>(texts: Record<K, string>): Record<K, Statement> {
  const out = {} as Record<K, Statement>;
  for (const key of Object.keys(texts) as K[]) out[key] = { name: `node_daemon_${key}`, text: texts[key] };
  return out;
}

const STACKS_OF_NODE = `FROM stacks WHERE selected_node_id = $1 AND stack_small_id > $2
    ORDER BY stack_small_id LIMIT $3`;
// Like SQLite's REAL arithmetic: double division, zero capacity counting as full (CASE keeps the
// division from running on it).
const FILLED_STACKS_OF_NODE = `FROM stacks WHERE selected_node_id = $1
    AND CASE WHEN num_compute_units = 0 THEN true
      ELSE already_computed_units::float8 / num_compute_units::float8 >= $2::float8 END
    AND stack_small_id > $3 ORDER BY stack_small_id LIMIT $4`;
/** The list queries, exported for the test that checks their plans use the indexes. */
// The lists take a page: rows after an id ($n-1 = -1: from the first), at most $n rows (NULL: all).
export const LIST_QUERIES = {
  subscriptions: `SELECT * FROM node_subscriptions WHERE node_small_id = $1 AND task_small_id > $2
    ORDER BY task_small_id LIMIT $3`,
  stacks: `SELECT ${STACK_COLUMNS} ${STACKS_OF_NODE}`,
  stacksFilled: `SELECT ${STACK_COLUMNS} ${FILLED_STACKS_OF_NODE}`,
  // The same lists, only the columns that change (KeptStacks keeps the rest).
  stacksState: `SELECT ${STACK_STATE_COLUMNS} ${STACKS_OF_NODE}`,
  stacksFilledState: `SELECT ${STACK_STATE_COLUMNS} ${FILLED_STACKS_OF_NODE}`,
  claimed: `SELECT ${TICKET_COLUMNS} FROM stack_settlement_tickets
    WHERE selected_node_id = $1 AND is_claimed AND stack_small_id > $2 ORDER BY stack_small_id LIMIT $3`,
  disputesAgainst: `SELECT ${DISPUTE_COLUMNS} FROM stack_attestation_disputes
    WHERE original_node_id = $1 AND stack_small_id > $2 ORDER BY stack_small_id, attestation_node_id LIMIT $3`,
  disputesOwn: `SELECT ${DISPUTE_COLUMNS} FROM stack_attestation_disputes
    WHERE attestation_node_id = $1 AND stack_small_id > $2 ORDER BY stack_small_id LIMIT $3`,
} as const;

/**
 * What the autopilot asks, exported for the test that checks each is one index range whatever the
 * statistics say (DECISIONS.md, "Each autopilot question is one index range, whatever the statistics").
 */
export const AUTOPILOT_QUERIES = {
  settleCandidates: `SELECT stack_small_id, ${TERMS_COLUMNS} FROM stacks
    WHERE selected_node_id = $1 AND NOT in_settle_period AND NOT is_claimed AND already_computed_units <> 0
      AND fill_ppm >= $2
    UNION SELECT stack_small_id, ${TERMS_COLUMNS} FROM stacks
    WHERE selected_node_id = $1 AND NOT in_settle_period AND NOT is_claimed
      AND last_usage_at IS NOT NULL AND last_usage_at < $3
    ORDER BY stack_small_id`,
  oldestUsage: `SELECT min(last_usage_at) AS at FROM stacks
    WHERE selected_node_id = $1 AND NOT in_settle_period AND NOT is_claimed AND last_usage_at IS NOT NULL`,
  // The lookups are LATERAL ... LIMIT 1 (one row by a unique key either way): a join the planner may
  // turn into a hash join over a whole table when its estimate of the rows is off.
  claimable: `SELECT t.stack_small_id, t.num_claimed_compute_units, t.claimable_from_epoch,
      s.price_per_one_million_compute_units, s.num_compute_units, s.security_level
    FROM stack_settlement_tickets t
    LEFT JOIN LATERAL (SELECT price_per_one_million_compute_units, num_compute_units, security_level
      FROM stacks WHERE stacks.stack_small_id = t.stack_small_id LIMIT 1) s ON true
    WHERE t.selected_node_id = $1 AND NOT t.is_claimed AND NOT t.is_in_dispute AND t.claimable_from_epoch <= $2
    ORDER BY t.stack_small_id`,
  requests: `SELECT r.stack_small_id, r.slot, t.claimable_from_epoch AS until_epoch, t.is_in_dispute,
      h.held IS NOT NULL AS has_record
    FROM attestation_requests r
    CROSS JOIN LATERAL (SELECT claimable_from_epoch, is_in_dispute, is_claimed FROM stack_settlement_tickets
      WHERE stack_settlement_tickets.stack_small_id = r.stack_small_id LIMIT 1) t
    LEFT JOIN LATERAL (SELECT true AS held FROM stack_hashes
      WHERE stack_hashes.stack_small_id = r.stack_small_id LIMIT 1) h ON true
    WHERE r.node_small_id = $1 AND NOT r.attested AND NOT t.is_claimed
    ORDER BY r.stack_small_id, r.slot`,
} as const;

export const BUMP_VERSION = 'UPDATE store_version SET version = version + 1';
/** Moves each of the topics ($1) one version on. */
const BUMP_TOPICS = `INSERT INTO topic_versions (topic, version) SELECT unnest($1::text[]), 1
    ON CONFLICT (topic) DO UPDATE SET version = topic_versions.version + 1`;
/**
 * The same, and the store's version with them: one prepared statement where the version's bump went with
 * COMMIT as a second one, parsed and planned again by the server on every commit (#transaction).
 */
const BUMP_TOPICS_AND_VERSION = `WITH v AS (${BUMP_VERSION}) ${BUMP_TOPICS}`;

/**
 * The versions of one to eight topics, a statement for each number of them: `topic IN ($1, $2)` costs the
 * server about 30 µs of user CPU against 45 for `topic = ANY($1::text[])`, which reads an array first
 * (DECISIONS.md, "PostgreSQL reads a turn's topic versions with a statement for each number of topics"). A
 * turn's reads usually ask for one or two; more use topicVersions.
 */
export const TOPIC_VERSIONS_IN: readonly Statement[] = Array.from({ length: 8 }, (_, i) => ({
  name: `node_daemon_topicVersions${i + 1}`,
  text: `SELECT topic, version FROM topic_versions WHERE topic IN (${Array.from({ length: i + 1 }, (_, j) => `$${j + 1}`).join(', ')})`,
}));

/**
 * A node's kept list, read in one statement, so in one snapshot: that snapshot, the node's stacks topic
 * version ($2) and the removals count, then whole rows (STACK_COLUMNS); one row of nulls when none match.
 */
const NODE_LIST_HEAD = `SELECT pg_current_snapshot()::text, (SELECT version FROM topic_versions WHERE topic = $2),
    (SELECT stacks_removed::text FROM store_version), s.*
  FROM (SELECT 1) one LEFT JOIN LATERAL (SELECT ${STACK_COLUMNS} FROM stacks WHERE selected_node_id = $1`;
/** The kept list queries, exported for the test that checks their plans use the indexes. */
export const NODE_LIST_QUERIES = {
  nodeList: `${NODE_LIST_HEAD} ORDER BY stack_small_id) s ON true`,
  // Only the rows whose last writer the kept list's snapshot ($3) did not see: committed since, or still
  // running then (0007-stack-write-stamps.sql). Those it saw were written before every xid from its xmin.
  nodeListSince: `${NODE_LIST_HEAD} AND written_xid >= pg_snapshot_xmin($3::pg_snapshot)
      AND NOT pg_visible_in_snapshot(written_xid, $3::pg_snapshot) ORDER BY stack_small_id) s ON true`,
} as const;

export const S = statements({
  ...LIST_QUERIES,
  ...NODE_LIST_QUERIES,
  tasks: 'SELECT * FROM tasks WHERE task_small_id > $1 ORDER BY task_small_id LIMIT $2',
  getCursor: 'SELECT * FROM indexer_cursors WHERE source = $1',
  getStackHash: 'SELECT total_hash, num_requests FROM stack_hashes WHERE stack_small_id = $1',
  getTask: 'SELECT * FROM tasks WHERE task_small_id = $1',
  getNode: 'SELECT node_small_id, badge_id, sui_address FROM nodes WHERE node_small_id = $1',
  nodeNamed: `SELECT 1 AS named FROM node_subscriptions WHERE node_small_id = $1
    UNION ALL SELECT 1 FROM stacks WHERE selected_node_id = $1 LIMIT 1`,
  getStack: `SELECT ${STACK_COLUMNS} FROM stacks WHERE stack_small_id = $1`,
  getSubscription: 'SELECT * FROM node_subscriptions WHERE node_small_id = $1 AND task_small_id = $2',
  getTicket: `SELECT ${TICKET_COLUMNS} FROM stack_settlement_tickets WHERE stack_small_id = $1`,
  eligibleSubscribers: `SELECT count(*)::int AS n FROM node_subscriptions WHERE task_small_id = $1
    AND valid AND price_per_one_million_compute_units <= $2 AND max_num_compute_units >= $3`,
  eventsClaimed: 'SELECT event_key FROM applied_events WHERE event_key = ANY($1::text[])',
  chainState: 'SELECT epoch, parameters FROM chain_state WHERE id = 1',
  ledger: `SELECT s.stack_small_id, s.price_per_one_million_compute_units, s.num_compute_units,
      s.security_level, s.already_computed_units, s.is_claimed AS stack_claimed,
      t.stack_small_id AS t_stack_small_id, t.num_claimed_compute_units, t.is_in_dispute,
      t.is_claimed AS t_claimed, t.claimable_from_epoch, t.claimed_epoch, t.node_fee_amount, t.user_refund_amount
    FROM stacks s LEFT JOIN stack_settlement_tickets t ON t.stack_small_id = s.stack_small_id
    WHERE s.selected_node_id = $1
    UNION ALL
    SELECT t.stack_small_id, NULL, NULL, NULL, NULL, t.is_claimed, t.stack_small_id,
      t.num_claimed_compute_units, t.is_in_dispute, t.is_claimed, t.claimable_from_epoch,
      t.claimed_epoch, t.node_fee_amount, t.user_refund_amount
    FROM stack_settlement_tickets t
    WHERE t.selected_node_id = $1 AND NOT EXISTS (SELECT 1 FROM stacks s WHERE s.stack_small_id = t.stack_small_id)`,
  rewards: 'SELECT * FROM attester_rewards WHERE node_small_id = $1 ORDER BY stack_small_id, slot',
  ...AUTOPILOT_QUERIES,
  actions: 'SELECT * FROM autopilot_actions ORDER BY id DESC LIMIT $1',
  spending: `SELECT at, node_small_id, status, gas_estimate, gas_used FROM autopilot_actions
    WHERE at >= $1 AND status IN ('pending', 'succeeded', 'failed') ORDER BY at`,
  pendingActions: "SELECT * FROM autopilot_actions WHERE status = 'pending' ORDER BY id DESC LIMIT $1",
  insertAction: `INSERT INTO autopilot_actions (at, updated_at, kind, node_small_id, stack_small_ids,
      status, reason, node_fee_amount, gas_estimate, tx_digests, error, gas_used)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING *`,
  updateAction: `UPDATE autopilot_actions SET status = $1, tx_digests = $2, error = $3, updated_at = $4,
    node_fee_amount = coalesce($5, node_fee_amount), gas_used = coalesce($6, gas_used) WHERE id = $7 RETURNING *`,
  // Node events: the counter row's lock is held to COMMIT, so ids are gap-free and in commit order across
  // every process (0004-node-events.sql); the notification is delivered at COMMIT.
  appendNodeEvents: `WITH c AS (UPDATE node_event_counter SET last = last + cardinality($1::bigint[]) WHERE id = 1
      RETURNING last)
    INSERT INTO node_events (id, at, type, node_small_id, other_node_small_id, data)
    SELECT c.last - cardinality($1::bigint[]) + e.ord, e.at, e.type, e.node, e.other, e.data
    FROM c, unnest($1::bigint[], $2::text[], $3::numeric[], $4::numeric[], $5::text[])
      WITH ORDINALITY AS e(at, type, node, other, data, ord)`,
  notifyNodeEvents: "SELECT pg_notify($1, '')",
  nodeEvents: `SELECT * FROM node_events WHERE id > $1
      AND ($2::numeric[] IS NULL OR node_small_id IS NULL OR node_small_id = ANY($2) OR other_node_small_id = ANY($2))
      AND ($3::text[] IS NULL OR type = ANY($3))
    ORDER BY id LIMIT $4`,
  nodeEventBounds: `SELECT (SELECT min(id) FROM node_events) AS oldest,
    (SELECT last FROM node_event_counter WHERE id = 1) AS newest`,
  firstEventSince: 'SELECT id FROM node_events WHERE at >= $1 ORDER BY id LIMIT 1',
  pruneEvents: `DELETE FROM node_events WHERE id < greatest(
      coalesce((SELECT id FROM node_events WHERE at >= $1 ORDER BY id LIMIT 1),
        (SELECT last + 1 FROM node_event_counter WHERE id = 1)),
      (SELECT last FROM node_event_counter WHERE id = 1) - $2 + 1)`,
  becomingClaimable: `SELECT t.stack_small_id, t.selected_node_id, t.num_claimed_compute_units, t.claimable_from_epoch,
      s.price_per_one_million_compute_units, s.num_compute_units, s.security_level
    FROM stack_settlement_tickets t LEFT JOIN stacks s ON s.stack_small_id = t.stack_small_id
    WHERE NOT t.is_claimed AND NOT t.is_in_dispute AND t.claimable_from_epoch > $1 AND t.claimable_from_epoch <= $2
    ORDER BY t.stack_small_id`,
  dataVersion: 'SELECT version FROM store_version',

  // Usage (a group of reports): the stack rows are locked first; the hash rows are read (and locked) by the
  // next statement, whose snapshot is taken once those locks are held, so it sees what the previous holders
  // committed. The two are pipelined: one round trip. Both lock in id order, so two groups (two daemons on
  // one database) never wait on each other in a cycle.
  lockStacks: `SELECT stack_small_id, selected_node_id, num_compute_units, already_computed_units,
      num_total_messages FROM stacks WHERE stack_small_id = ANY($1::numeric[]) ORDER BY stack_small_id FOR UPDATE`,
  lockHashes: `SELECT stack_small_id, total_hash, num_requests FROM stack_hashes
      WHERE stack_small_id = ANY($1::numeric[]) ORDER BY stack_small_id FOR UPDATE`,
  // setUsage on a stack this process wrote last, without the locking reads: each UPDATE takes its row's
  // lock and, should another transaction have changed the row meanwhile, checks its WHERE again on what
  // that one committed. Unless both rows still hold what this process left ($8 to $11), the guard fails
  // the transaction.
  setUsageGuarded: `WITH u AS (UPDATE stacks SET already_computed_units = $2, num_total_messages = $3,
        fill_ppm = $6, last_usage_at = $7
      WHERE stack_small_id = $1::numeric AND already_computed_units = $8 AND num_total_messages = $9
      RETURNING 1),
    h AS (UPDATE stack_hashes SET total_hash = $4, num_requests = $5
      WHERE stack_small_id = $1::numeric AND total_hash = $10 AND num_requests = $11 RETURNING 1)
    SELECT node_daemon_usage_guard((SELECT count(*) FROM u) + (SELECT count(*) FROM h), 2)`,
  setUsage: `WITH u AS (UPDATE stacks SET already_computed_units = $2, num_total_messages = $3, fill_ppm = $6,
      last_usage_at = $7 WHERE stack_small_id = $1::numeric)
    INSERT INTO stack_hashes (stack_small_id, total_hash, num_requests) VALUES ($1::numeric, $4, $5)
    ON CONFLICT (stack_small_id) DO UPDATE SET
      total_hash = excluded.total_hash, num_requests = excluded.num_requests`,
  // The usage source's mirror (usage.ts): the open stacks it follows (with usage; without, after an id),
  // their rows locked in id order, and what it sets.
  followedStacks: `SELECT stack_small_id, already_computed_units, num_total_messages, num_compute_units
      FROM stacks WHERE selected_node_id = $1 AND NOT in_settle_period AND NOT is_claimed
        AND last_usage_at IS NOT NULL
    UNION ALL SELECT stack_small_id, already_computed_units, num_total_messages, num_compute_units FROM stacks
      WHERE selected_node_id = $1 AND stack_small_id > $2::numeric AND NOT in_settle_period AND NOT is_claimed
        AND last_usage_at IS NULL`,
  lockMirrored: `SELECT stack_small_id, selected_node_id, num_compute_units, already_computed_units,
      num_total_messages, in_settle_period, is_claimed, fill_ppm, fill_peak_ppm FROM stacks
    WHERE stack_small_id = ANY($1::numeric[]) ORDER BY stack_small_id FOR UPDATE`,
  setMirrored: `UPDATE stacks s SET already_computed_units = m.already, num_total_messages = m.messages,
      fill_ppm = m.fill, fill_peak_ppm = m.peak, last_usage_at = $6
    FROM unnest($1::numeric[], $2::numeric[], $3::numeric[], $4::int[], $5::int[]) AS m(id, already, messages, fill, peak)
    WHERE s.stack_small_id = ANY($1::numeric[]) AND s.stack_small_id = m.id`,
  // Single statements that also bump the version: atomic without BEGIN/COMMIT round trips.
  putStackHash: `WITH p AS (INSERT INTO stack_hashes (stack_small_id, total_hash, num_requests) VALUES ($1, $2, $3)
      ON CONFLICT (stack_small_id) DO UPDATE SET
        total_hash = excluded.total_hash, num_requests = excluded.num_requests)
    ${BUMP_VERSION}`,
  expireIdempotency: 'DELETE FROM idempotency_keys WHERE created_at < $1',
  reserveIdempotency: `INSERT INTO idempotency_keys (key, request_hash, status, created_at) VALUES ($1, $2, 0, $3)
    ON CONFLICT (key) DO NOTHING`,
  getIdempotency: 'SELECT request_hash, status, response, created_at FROM idempotency_keys WHERE key = $1',
  completeIdempotency: `WITH c AS (UPDATE idempotency_keys SET status = $1, response = $2 WHERE key = $3
      RETURNING 1)
    ${BUMP_VERSION} WHERE EXISTS (SELECT 1 FROM c)`,
  releaseIdempotency: `WITH r AS (DELETE FROM idempotency_keys WHERE key = $1 AND status = 0 RETURNING 1)
    ${BUMP_VERSION} WHERE EXISTS (SELECT 1 FROM r)`,

  // The indexer's writes. Those of many rows take arrays, in the order the rows came.
  claimEvents: `INSERT INTO applied_events (event_key) SELECT unnest($1::text[])
    ON CONFLICT DO NOTHING RETURNING event_key`,
  putTask: `INSERT INTO tasks (task_small_id, task_id, role, model_name, security_level,
    minimum_reputation_score) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
  deprecateTask: 'UPDATE tasks SET is_deprecated = true, deprecated_at_epoch = $1 WHERE task_small_id = $2',
  removeTask: `WITH s AS (UPDATE node_subscriptions SET valid = false WHERE task_small_id = $2)
    UPDATE tasks SET is_deprecated = true, is_removed = true, removed_at_epoch = $1 WHERE task_small_id = $2`,
  putNode: `INSERT INTO nodes (node_small_id, badge_id, sui_address) VALUES ($1, $2, $3)
    ON CONFLICT DO NOTHING`,
  putNodeModel: `INSERT INTO node_models (node_small_id, model_name, echelon_id) VALUES ($1, $2, $3)
    ON CONFLICT (node_small_id, model_name) DO UPDATE SET echelon_id = excluded.echelon_id`,
  // Each subscription once (a stage holds a key once): DO UPDATE may not change a row twice.
  putSubscriptions: `INSERT INTO node_subscriptions (node_small_id, task_small_id,
    price_per_one_million_compute_units, max_num_compute_units, valid)
    SELECT *, true FROM unnest($1::numeric[], $2::numeric[], $3::numeric[], $4::numeric[])
    ON CONFLICT (node_small_id, task_small_id) DO UPDATE SET
      price_per_one_million_compute_units = excluded.price_per_one_million_compute_units,
      max_num_compute_units = excluded.max_num_compute_units, valid = true`,
  deleteSubscription: 'DELETE FROM node_subscriptions WHERE node_small_id = $1 AND task_small_id = $2',
  // The stacks of a stage, in their order: each one this transaction found absent (createStack), so each
  // must be inserted; one that another writer created meanwhile fails the transaction (migration 0010).
  putStacks: `WITH i AS (INSERT INTO stacks (selected_node_id, stack_small_id, stack_id, owner_address,
      task_small_id, num_compute_units, price_per_one_million_compute_units, is_confidential, security_level)
      SELECT s.node, s.id, s.stack_id, s.owner, s.task, s.units, s.price,
        coalesce(t.security_level = 1, false), t.security_level
      FROM unnest($1::numeric[], $2::numeric[], $3::text[], $4::text[], $5::numeric[], $6::numeric[],
        $7::numeric[]) WITH ORDINALITY AS s(node, id, stack_id, owner, task, units, price, n)
      LEFT JOIN tasks t ON t.task_small_id = s.task
      ORDER BY s.n
      ON CONFLICT DO NOTHING RETURNING 1)
    SELECT node_daemon_created_guard((SELECT count(*) FROM i), cardinality($1::numeric[]))`,
  // Which of these stacks exist (createStack asks before it inserts).
  stacksPresent: 'SELECT stack_small_id FROM stacks WHERE stack_small_id = ANY($1::numeric[])',
  // Try-settles: each ticket, its stack marked settling, and one attestation request per requested slot.
  putTickets: `WITH t AS (INSERT INTO stack_settlement_tickets (stack_small_id, selected_node_id,
      num_claimed_compute_units, requested_attestation_nodes, committed_stack_proofs, stack_merkle_leaves,
      settled_epoch, claimable_from_epoch)
      SELECT * FROM unnest($1::numeric[], $2::numeric[], $3::numeric[], $4::text[], $5::bytea[], $6::bytea[],
        $7::numeric[], $8::numeric[])
      ON CONFLICT DO NOTHING),
    r AS (INSERT INTO attestation_requests (stack_small_id, slot, node_small_id)
      SELECT * FROM unnest($9::numeric[], $10::int[], $11::numeric[]) ON CONFLICT DO NOTHING)
    UPDATE stacks SET in_settle_period = true WHERE stack_small_id = ANY($1::numeric[])`,
  retireRequests:
    'DELETE FROM attestation_requests WHERE node_small_id = $1 AND stack_small_id = $2 AND NOT attested',
  requestAttested: `UPDATE attestation_requests SET attested = true
    WHERE stack_small_id = $1 AND node_small_id = $2`,
  stackTerms: `SELECT selected_node_id, ${TERMS_COLUMNS} FROM stacks WHERE stack_small_id = $1`,
  ticketAttesters: 'SELECT already_attested_nodes FROM stack_settlement_tickets WHERE stack_small_id = $1',
  // The same for a page's stacks at once (readAhead), and the security levels of the tasks it names.
  stacksTerms: `SELECT stack_small_id, selected_node_id, ${TERMS_COLUMNS} FROM stacks
    WHERE stack_small_id = ANY($1::numeric[])`,
  ticketsAttesters: `SELECT stack_small_id, already_attested_nodes FROM stack_settlement_tickets
    WHERE stack_small_id = ANY($1::numeric[])`,
  taskLevels: 'SELECT task_small_id, security_level FROM tasks WHERE task_small_id = ANY($1::numeric[])',
  putRewards: `INSERT INTO attester_rewards (stack_small_id, slot, node_small_id, amount, epoch)
    SELECT * FROM unnest($1::numeric[], $2::int[], $3::numeric[], $4::numeric[], $5::numeric[])
    ON CONFLICT DO NOTHING`,
  // Pages repeat the epoch: the chain's topic moves only when the epoch or the parameters do.
  bumpChainTopic: `WITH before AS (SELECT epoch, parameters FROM chain_state WHERE id = 1)
    INSERT INTO topic_versions (topic, version)
    SELECT 'chain', 1 WHERE NOT EXISTS (SELECT 1 FROM before
      WHERE ($1::numeric IS NULL OR epoch = $1::numeric) AND ($2::text IS NULL OR parameters = $2::text))
    ON CONFLICT (topic) DO UPDATE SET version = topic_versions.version + 1`,
  bumpTopicsAndVersion: BUMP_TOPICS_AND_VERSION,
  // The same, saying each topic's version after: a usage group patches its nodes' kept lists with them.
  bumpTopicsAndVersionReturning: `${BUMP_TOPICS_AND_VERSION} RETURNING topic, version`,
  subscribersOf: 'SELECT node_small_id FROM node_subscriptions WHERE task_small_id = $1',
  topicVersions: 'SELECT topic, version FROM topic_versions WHERE topic = ANY($1::text[])',
  storeId: 'SELECT store_id FROM store_identity WHERE id = 1',
  saveChainState: `INSERT INTO chain_state AS c (id, epoch, parameters, updated_at) VALUES (1, $1, $2, $3)
    ON CONFLICT (id) DO UPDATE SET epoch = coalesce(excluded.epoch, c.epoch),
      parameters = coalesce(excluded.parameters, c.parameters), updated_at = excluded.updated_at`,
  lockTicket: `SELECT selected_node_id, requested_attestation_nodes, stack_merkle_leaves, already_attested_nodes
    FROM stack_settlement_tickets WHERE stack_small_id = $1 FOR UPDATE`,
  attest: `UPDATE stack_settlement_tickets SET stack_merkle_leaves = $1, already_attested_nodes = $2
    WHERE stack_small_id = $3`,
  settleTicket: `INSERT INTO stack_settlement_tickets (stack_small_id, selected_node_id,
    num_claimed_compute_units, requested_attestation_nodes, committed_stack_proofs, dispute_settled_at_epoch)
    VALUES ($1, $2, $3, $4, $5, $6)
    ON CONFLICT (stack_small_id) DO UPDATE SET dispute_settled_at_epoch = excluded.dispute_settled_at_epoch`,
  // Claims through either path: each ticket (created when never seen) claimed, and its stack. The stacks
  // are also found by the ids alone, so the join never becomes a scan of the table.
  claimTickets: `WITH c AS (SELECT * FROM unnest($1::numeric[], $2::numeric[], $3::numeric[], $4::text[],
      $5::numeric[], $6::text[], $7::numeric[], $8::numeric[]) AS c(id, node, units, attesters, refund, path,
      epoch, fee)),
    t AS (INSERT INTO stack_settlement_tickets (stack_small_id, selected_node_id,
      num_claimed_compute_units, requested_attestation_nodes, user_refund_amount, claim_path, claimed_epoch,
      node_fee_amount, is_claimed)
      SELECT id, node, units, attesters, refund, path, epoch, fee, true FROM c
      ON CONFLICT (stack_small_id) DO UPDATE SET is_claimed = true,
        user_refund_amount = excluded.user_refund_amount,
        num_claimed_compute_units = excluded.num_claimed_compute_units, claim_path = excluded.claim_path,
        claimed_epoch = excluded.claimed_epoch, node_fee_amount = excluded.node_fee_amount),
    -- A claimed ticket asks nothing more (0006-autopilot-at-scale.sql).
    r AS (DELETE FROM attestation_requests WHERE stack_small_id = ANY($1::numeric[]))
    UPDATE stacks s SET is_claimed = true, user_refund_amount = c.refund FROM c
    WHERE s.stack_small_id = ANY($1::numeric[]) AND s.stack_small_id = c.id`,
  lockDisputedTicket: `SELECT requested_attestation_nodes, already_attested_nodes, is_in_dispute,
    claimable_from_epoch FROM stack_settlement_tickets WHERE stack_small_id = $1 FOR UPDATE`,
  disputeAttested:
    'UPDATE stack_settlement_tickets SET already_attested_nodes = $1 WHERE stack_small_id = $2',
  putDispute: `WITH d AS (INSERT INTO stack_attestation_disputes (stack_small_id, attestation_node_id,
      attestation_commitment, original_node_id, original_commitment) VALUES ($1::numeric, $2, $3, $4, $5)
      ON CONFLICT DO NOTHING)
    UPDATE stack_settlement_tickets SET is_in_dispute = true WHERE stack_small_id = $1::numeric`,
  saveCursor: `INSERT INTO indexer_cursors AS c (source, cursor, applied, duplicate, ignored, unknown, malformed,
    orphaned, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
    ON CONFLICT (source) DO UPDATE SET cursor = excluded.cursor, applied = c.applied + excluded.applied,
      duplicate = c.duplicate + excluded.duplicate, ignored = c.ignored + excluded.ignored,
      unknown = c.unknown + excluded.unknown, malformed = c.malformed + excluded.malformed,
      orphaned = c.orphaned + excluded.orphaned, updated_at = excluded.updated_at`,
});
