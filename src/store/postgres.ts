import { createHash } from 'node:crypto';
import { Client, type ClientBase, Pool, type PoolClient, type QueryResult } from 'pg';
import { GroupCommit } from '../internal/group-commit.ts';
import { Listeners } from '../internal/listeners.ts';
import { normalizeU64, type U64 } from '../internal/u64.ts';
import { claimableFromEpoch } from '../protocol/epochs.ts';
import { ticketLeaves } from '../protocol/proofs.ts';
import type {
  ClaimPath,
  NodeRecord,
  NodeSubscription,
  Stack,
  StackAttestationDispute,
  StackSettlementTicket,
  Task,
} from '../schemas/model.ts';
import { connectError, fromPostgresError, StoreError, statementError } from './errors.ts';
import {
  autopilotEvent,
  eventData,
  type NewNodeEvent,
  type NodeEventQuery,
  type NodeEventRow,
} from './node-events.ts';
import { arrayLiteral } from './pg-array.ts';
import { CONNECT_TIMEOUT_MS, redactUrl, runMigrations } from './postgres-migrations.ts';
import {
  attestedRow,
  compareDigits,
  DISPUTE_COLUMNS,
  digitsOf,
  disputedAttestationRow,
  encodeParameters,
  idList,
  joinFragments,
  KeptLists,
  KeptStacks,
  type ListBody,
  listIndex,
  listSlice,
  mergedList,
  parseIdList,
  restatedList,
  rowMappers,
  STACK_COLUMNS,
  STACK_STATE_COLUMNS,
  sameState,
  stackFragment,
  stacksJson,
  stateOf,
  TERMS_COLUMNS,
  TICKET_COLUMNS,
  usageChange,
} from './rows.ts';
import type {
  Attestation,
  AttestationOutcome,
  AttestationRequest,
  AttesterReward,
  AutopilotAction,
  ChainState,
  ClaimableTicket,
  ClaimContext,
  ClaimRecord,
  CursorState,
  Dispute,
  EventLookup,
  IndexerCounts,
  IndexerTx,
  JsonRows,
  Lease,
  LedgerRow,
  NewStack,
  NewTask,
  OpenStack,
  Page,
  StackClaimed,
  StackTerms,
  Store,
  TicketClaimed,
  TicketSettled,
  TrySettle,
  UsageOutcome,
  UsageReport,
} from './store.ts';
import { IDEMPOTENCY_TTL_MS, type IdempotencyRecord, topics } from './store.ts';

const DEFAULT_POOL_SIZE = 10;
const LOCK_TIMEOUT_MS = 10_000;
const IDLE_IN_TRANSACTION_TIMEOUT_MS = 60_000;
/** Rows of writes the indexer keeps waiting, at most: sent then, the server works while it decodes more. */
const WAITING_ROWS = 1000;
/** How often a lease's session is pinged, so a connection that silently died is noticed. */
const LEASE_HEARTBEAT_MS = 5000;

/**
 * A node's whole stack list as kept between reads (see #nodeList), and the snapshot it shows: every stack
 * as that snapshot saw it, and the node's stacks topic version in it.
 */
interface NodeList {
  /** pg_current_snapshot() of the statement that read the rows, as text. */
  snapshot: string;
  version: number;
  /** store_version.stacks_removed then: when it moves, rows may have left the list. */
  removed: string;
  /** Each stack's changing columns (STACK_STATE_COLUMNS), in list order. */
  state: unknown[][];
  /** Each stack's place in the list, by its small id's digits. */
  index: Map<string, number>;
  list: ListBody;
  /**
   * Rows of STACK_STATE_COLUMNS, by index, that this process's own usage groups wrote since `state` and
   * `list` were made (#patchOwnUsage), and that the next read writes in (#materialized): a busy node whose
   * list nobody reads does not restate it for every group. The one part of a kept list that changes: each
   * group adds to it in place, and nothing but #materialized reads it.
   */
  pending?: Map<number, unknown[]>;
}

/** A stack's usage columns as a usage group leaves them, as decimal text (#patchOwnUsage). */
interface UsageColumns {
  already: string;
  messages: string;
}

/** Times a group of usage reports is written before a deadlock or serialization failure is given up on. */
const USAGE_ATTEMPTS = 3;

/** A stack as this process's last usage group left it: its locked columns and its request record. */
interface UsageState {
  row: Row;
  record: Row;
}

/** Stacks whose usage state this process keeps for one-round-trip groups; past it, it starts over. */
const USAGE_STATES = 100_000;

/** The SQLSTATE of node_daemon_usage_guard (migration 0009): the rows were not what this process kept. */
const USAGE_GUARD_FAILED = 'NDU01';

/** The command tag of a query's last result (a simple query of several statements answers several). */
function lastCommand(results: unknown): string | undefined {
  return ((Array.isArray(results) ? results.at(-1) : results) as QueryResult | undefined)?.command;
}

/** A group on kept stacks that one of its reports refuses: it is read and decided again. */
class UsageUnguarded extends Error {}

/**
 * The group has to be read: a usage guard failed (the stacks were not as this process kept them,
 * migration 0009), or one of its reports writes nothing for a guard to check.
 */
function isUsageGuardFailure(error: unknown): boolean {
  if (error instanceof UsageUnguarded) return true;
  const cause = error instanceof StoreError ? error.cause : error;
  return (cause as { code?: unknown } | undefined)?.code === USAGE_GUARD_FAILED;
}

/** The session advisory-lock key of a lease or lock name: the first 8 bytes of its sha256, signed. */
function advisoryKey(name: string): string {
  return createHash('sha256').update(`node-daemon ${name}`).digest().readBigInt64BE(0).toString();
}

// --- u64 encoding: NUMERIC(20,0) in the database, bound and read as decimal text ---------------------------

/** A u64 as the decimal string bound to a NUMERIC parameter; a non-integer throws as it does for SQLite. */
function enc(value: U64): string {
  if (typeof value === 'bigint') return value.toString();
  return Number.isSafeInteger(value) ? String(value) : BigInt(value).toString();
}

/** pg hands NUMERIC (and BIGINT) columns over as strings, untouched by any process-wide type parser. */
function dec(value: unknown): U64 {
  if (typeof value === 'string' && /^[0-9]{1,20}$/.test(value)) {
    return value.length < 16 ? Number(value) : normalizeU64(BigInt(value));
  }
  if (typeof value === 'number') return value;
  throw new StoreError('store_corrupt', `unexpected u64 column value ${String(value)}`, false);
}

function encNullable(value: U64 | null | undefined): string | null {
  return value === undefined || value === null ? null : enc(value);
}

type Row = Record<string, unknown>;

const rows = rowMappers(dec);

/** A page's bind values: after an id (-1: from the first), at most `limit` rows (null: all). */
function pageArgs(page: Page): [string, number | null] {
  return [page.after === undefined ? '-1' : enc(page.after), page.limit ?? null];
}

/** A claim through either path: the ticket (created when never seen) claimed, and its stack. */
interface Claim {
  claim: StackClaimed;
  /** The ticket's requested attesters as stored (idList). */
  attesters: string;
  path: ClaimPath;
  record: ClaimRecord;
}

/**
 * The indexer's writes that wait to be sent with others of their kind (see #indexerTx): each kind of a
 * stage goes as one statement, its rows in the order they came.
 */
interface Stage {
  stacks: NewStack[];
  subscriptions: Omit<NodeSubscription, 'valid'>[];
  tickets: { ticket: TrySettle; epoch: U64 | undefined }[];
  claims: Claim[];
  rewards: AttesterReward[];
}

const newStage = (): Stage => ({ stacks: [], subscriptions: [], tickets: [], claims: [], rewards: [] });

/** The statements of a stage, one per kind it holds. */
function stageStatements(stage: Stage): [Statement, unknown[]][] {
  const out: [Statement, unknown[]][] = [];
  const { stacks, subscriptions, tickets, claims, rewards } = stage;
  if (stacks.length > 0) {
    out.push([
      S.putStacks,
      [
        stacks.map((s) => enc(s.selected_node_id)),
        stacks.map((s) => enc(s.stack_small_id)),
        stacks.map((s) => s.stack_id),
        stacks.map((s) => s.owner_address),
        stacks.map((s) => enc(s.task_small_id)),
        stacks.map((s) => enc(s.num_compute_units)),
        stacks.map((s) => enc(s.price_per_one_million_compute_units)),
      ],
    ]);
  }
  if (subscriptions.length > 0) {
    out.push([
      S.putSubscriptions,
      [
        subscriptions.map((s) => enc(s.node_small_id)),
        subscriptions.map((s) => enc(s.task_small_id)),
        subscriptions.map((s) => enc(s.price_per_one_million_compute_units)),
        subscriptions.map((s) => enc(s.max_num_compute_units)),
      ],
    ]);
  }
  if (tickets.length > 0) {
    // One attestation request per requested slot.
    const requests = tickets.flatMap(({ ticket: t }) =>
      t.requested_attestation_nodes.map((node, slot) => [enc(t.stack_small_id), slot, enc(node)] as const),
    );
    out.push([
      S.putTickets,
      [
        tickets.map(({ ticket: t }) => enc(t.stack_small_id)),
        tickets.map(({ ticket: t }) => enc(t.selected_node_id)),
        tickets.map(({ ticket: t }) => enc(t.num_claimed_compute_units)),
        tickets.map(({ ticket: t }) => idList(t.requested_attestation_nodes)),
        tickets.map(({ ticket: t }) => t.committed_stack_proof),
        tickets.map(({ ticket: t }) =>
          ticketLeaves(t.stack_merkle_leaf, t.requested_attestation_nodes.length),
        ),
        tickets.map(({ epoch }) => encNullable(epoch)),
        tickets.map(({ epoch }) => encNullable(epoch === undefined ? undefined : claimableFromEpoch(epoch))),
        requests.map((r) => r[0]),
        requests.map((r) => r[1]),
        requests.map((r) => r[2]),
      ],
    ]);
  }
  if (claims.length > 0) {
    out.push([
      S.claimTickets,
      [
        claims.map((c) => enc(c.claim.stack_small_id)),
        claims.map((c) => enc(c.claim.selected_node_id)),
        claims.map((c) => enc(c.claim.num_claimed_compute_units)),
        claims.map((c) => c.attesters),
        claims.map((c) => enc(c.claim.user_refund_amount)),
        claims.map((c) => c.path),
        claims.map((c) => encNullable(c.record.epoch)),
        claims.map((c) => encNullable(c.record.node_fee_amount)),
      ],
    ]);
  }
  if (rewards.length > 0) {
    out.push([
      S.putRewards,
      [
        rewards.map((r) => enc(r.stack_small_id)),
        rewards.map((r) => r.slot),
        rewards.map((r) => enc(r.node_small_id)),
        rewards.map((r) => enc(r.amount)),
        rewards.map((r) => encNullable(r.epoch)),
      ],
    ]);
  }
  return out;
}

const ignore = () => undefined;

// --- statements ------------------------------------------------------------------------------------------

/**
 * A named statement: pg prepares it once per pooled connection and then only binds and executes it. A
 * parameter used both as a u64 column value and in a comparison is cast to numeric in both places, or
 * PostgreSQL deduces two types for it (the u64 domain and numeric).
 */
interface Statement {
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
 * statistics say (docs/PERFORMANCE.md, "Autopilot pass").
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

const BUMP_VERSION = 'UPDATE store_version SET version = version + 1';
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
 * (PERFORMANCE.md, fifteenth pass). A turn's reads usually ask for one or two; more use topicVersions.
 */
const TOPIC_VERSIONS_IN: readonly Statement[] = Array.from({ length: 8 }, (_, i) => ({
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

const S = statements({
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
  pendingActions: "SELECT * FROM autopilot_actions WHERE status = 'pending' ORDER BY id DESC LIMIT $1",
  insertAction: `INSERT INTO autopilot_actions (at, updated_at, kind, node_small_id, stack_small_ids,
      status, reason, node_fee_amount, gas_estimate, tx_digests, error)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING *`,
  updateAction: `UPDATE autopilot_actions SET status = $1, tx_digests = $2, error = $3, updated_at = $4,
    node_fee_amount = coalesce($5, node_fee_amount) WHERE id = $6 RETURNING *`,
  // Node events: the counter row's lock is held to COMMIT, so ids are gap-free and in commit order across
  // every process (0004-node-events.sql); the notification is delivered at COMMIT.
  appendNodeEvents: `WITH c AS (UPDATE node_event_counter SET last = last + cardinality($1::bigint[]) WHERE id = 1
      RETURNING last)
    INSERT INTO node_events (id, at, type, node_small_id, other_node_small_id, data)
    SELECT c.last - cardinality($1::bigint[]) + e.ord, e.at, e.type, e.node, e.other, e.data
    FROM c, unnest($1::bigint[], $2::text[], $3::numeric[], $4::numeric[], $5::text[])
      WITH ORDINALITY AS e(at, type, node, other, data, ord)`,
  notifyNodeEvents: "SELECT pg_notify('node_events', '')",
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

/**
 * The claim contexts of a page's stacks, read ahead in one round trip (IndexerTx.readAhead) and then kept as
 * a read would find them after each of the transaction's writes. That takes little: a stack's terms and
 * node never change once it exists (the first insert wins, as a task's security level does), a new ticket
 * has no attesters, and only recordAttestation and putDispute change them, after reading the locked row.
 * The indexer of a source holds its lease, so no other process changes them meanwhile.
 */
class ReadAhead {
  /** Each stack read ahead: its context's stack half; null while it does not exist; 'ask' when unknown. */
  readonly #stacks = new Map<string, { terms: StackTerms; node: U64 } | null | 'ask'>();
  /** The already_attested_nodes of each stack's ticket read ahead ([]: no ticket). */
  readonly #attested = new Map<string, U64[]>();
  /** The security level of each task read ahead (null: no such task). */
  readonly #levels = new Map<string, number | null>();
  /** How many writes it has followed: one made while a read-ahead's rows were on their way is not in them. */
  changes = 0;

  /** Adds what the read-ahead statements found for these stacks and tasks (ids already known stay). */
  add(stackIds: readonly string[], taskIds: readonly string[], stacks: Row[], tickets: Row[], tasks: Row[]) {
    const found = new Map(stacks.map((r) => [enc(dec(r.stack_small_id)), r]));
    const attested = new Map(tickets.map((r) => [enc(dec(r.stack_small_id)), r]));
    const levels = new Map(tasks.map((r) => [enc(dec(r.task_small_id)), Number(r.security_level)]));
    for (const id of stackIds) {
      if (this.#stacks.has(id)) continue;
      const row = found.get(id);
      this.#stacks.set(id, row ? { terms: rows.terms(row)!, node: dec(row.selected_node_id) } : null);
      const ticket = attested.get(id);
      this.#attested.set(id, ticket ? parseIdList(ticket.already_attested_nodes as string).map(dec) : []);
    }
    for (const id of taskIds) if (!this.#levels.has(id)) this.#levels.set(id, levels.get(id) ?? null);
  }

  /** The context, when the stack was read ahead and what a read would find is known. */
  context(id: U64): ClaimContext | undefined {
    const key = enc(id);
    const stack = this.#stacks.get(key);
    const attested = this.#attested.get(key);
    if (stack === undefined || stack === 'ask' || attested === undefined) return undefined;
    return {
      terms: stack === null ? undefined : { ...stack.terms },
      selected_node_id: stack === null ? null : stack.node,
      already_attested: [...attested],
    };
  }

  /** A task inserted (kept only if none was there: ON CONFLICT DO NOTHING). */
  putTask(task: NewTask): void {
    this.changes += 1;
    const key = enc(task.task_small_id);
    if (this.#levels.get(key) === null) this.#levels.set(key, task.security_level);
  }

  /** A stack inserted with its task's level (createStack stages only a stack it found absent). */
  putStack(s: NewStack): void {
    this.changes += 1;
    const key = enc(s.stack_small_id);
    if (this.#stacks.get(key) !== null) return;
    const level = this.#levels.get(enc(s.task_small_id));
    // The row as putStacks writes it: its task's level, or null when there is no such task.
    const row = {
      price_per_one_million_compute_units: enc(s.price_per_one_million_compute_units),
      num_compute_units: enc(s.num_compute_units),
      security_level: level ?? null,
    };
    this.#stacks.set(
      key,
      level === undefined ? 'ask' : { terms: rows.terms(row)!, node: dec(enc(s.selected_node_id)) },
    );
  }

  /** A ticket's attesters written by this transaction (idList text, as stored). */
  setAttested(id: U64, attested: string): void {
    this.changes += 1;
    const key = enc(id);
    if (this.#attested.has(key)) this.#attested.set(key, parseIdList(attested).map(dec));
  }
}

function closedError(): StoreError {
  return new StoreError('store_closed', 'the store is closed', false);
}

// --- the driver ------------------------------------------------------------------------------------------

export interface PostgresStoreOptions {
  /** postgres:// or postgresql:// URL (libpq form: host, port, database, user, password, sslmode...). */
  url: string;
  /** Connections in the pool; 10 unless set. */
  poolSize?: number;
  /** application_name of its connections, as pg_stat_activity shows them. */
  applicationName?: string;
  /** How long a statement waits for a row lock before failing with store_lock_not_available; 10 s. */
  lockTimeoutMs?: number;
}

/**
 * The PostgreSQL store, for daemons that share one database: a pool of connections, named statements,
 * u64 as NUMERIC(20,0). Readers use any pooled connection; a write transaction holds one connection from
 * BEGIN to COMMIT, and read-modify-writes lock their rows (SELECT ... FOR UPDATE) so other processes'
 * writers wait rather than interleave.
 */
export class PostgresStore implements Store {
  readonly engine = 'postgres' as const;
  readonly location: string;
  /** How many migrations this open applied (0 when the database was up to date). */
  readonly migrationsApplied: number;
  readonly #pool: Pool;
  #queue: Promise<unknown> = Promise.resolve();
  /** Set by close(): new work is refused, work already started finishes. */
  #closing: Promise<void> | undefined;
  #version: Promise<string> | undefined;
  #closed = false;
  #active = 0;
  #idle: (() => void) | undefined;
  readonly #listening = new WeakSet<PoolClient>();
  readonly #options: PostgresStoreOptions;
  /** The connections of leases and locks, outside the pool; ended by close(). */
  readonly #sessions = new Set<Client>();
  readonly #nodeEvents = new Listeners();
  #storeId: Promise<string> | undefined;
  /** The JSON of the stacks already listed, encoded, with the values it shows (see KeptStacks). */
  readonly #keptStacks = new KeptStacks();
  /** Each listed node's whole stack list, encoded, with the snapshot it shows (see #nodeList). */
  readonly #nodeLists = new KeptLists<NodeList>();
  /** Each stack as this process's last usage group left it (#recordUsage), by small id as decimal text. */
  readonly #usageStates = new Map<string, UsageState>();
  /** The session that LISTENs for other processes' node events, once someone listens. */
  #listener: Promise<void> | undefined;

  private constructor(pool: Pool, options: PostgresStoreOptions, migrationsApplied: number) {
    this.#pool = pool;
    this.#options = options;
    this.location = redactUrl(options.url);
    this.migrationsApplied = migrationsApplied;
  }

  /** Connects, applies the pending migrations (under the migration lock) and returns the store. */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const pool = new Pool({
      connectionString: options.url,
      max: options.poolSize ?? DEFAULT_POOL_SIZE,
      application_name: options.applicationName ?? 'node-daemon',
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      keepAlive: true,
      // A row lock held this long by another daemon fails the statement (55P03, retryable) instead of
      // stalling the indexer or a request; a transaction left idle this long is ended by the server, so a
      // hung daemon cannot hold the store_version row for everyone.
      lock_timeout: options.lockTimeoutMs ?? LOCK_TIMEOUT_MS,
      idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_TIMEOUT_MS,
      // Statements sent before the previous answer arrives (in order, each with its own Sync): see
      // #indexerTx. A connection is only ever used by one operation at a time.
      pipeline: true,
    });
    // An idle pooled connection that breaks (server restart, network) emits 'error' on the pool, which
    // would otherwise crash the process; the pool drops it and the next query connects afresh.
    pool.on('error', ignore);
    try {
      let client: PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        throw connectError(error);
      }
      client.on('error', ignore);
      try {
        const applied = await runMigrations(client);
        return new PostgresStore(pool, options, applied.length);
      } finally {
        client.release();
      }
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw error;
    }
  }

  /**
   * Runs one public operation: refuses it once close() has begun, counts it so close() can wait for it,
   * and translates what escapes it.
   */
  async #op<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#closing !== undefined) throw closedError();
    this.#active += 1;
    try {
      return await fn();
    } catch (error) {
      throw fromPostgresError(error);
    } finally {
      this.#active -= 1;
      if (this.#active === 0) this.#idle?.();
    }
  }

  /** Runs one statement: the single place where a query meets the driver. */
  async #exec(
    client: ClientBase,
    statement: Statement,
    values: unknown[],
    rowMode?: 'array',
  ): Promise<QueryResult<Row>> {
    if (this.#closed) throw closedError();
    try {
      // Arrays go as literals written here, not by pg (pg-array.ts).
      const config = {
        name: statement.name,
        text: statement.text,
        values: values.map((v) => (Array.isArray(v) ? arrayLiteral(v) : v)),
      };
      // Rows as arrays of values (rowMode 'array') come typed apart in pg: one result type here.
      return await (rowMode === 'array'
        ? (client.query({ ...config, rowMode }) as unknown as Promise<QueryResult<Row>>)
        : client.query<Row>(config));
    } catch (error) {
      throw statementError(error);
    }
  }

  async #connect(): Promise<PoolClient> {
    if (this.#closed) throw closedError();
    let client: PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (error) {
      throw connectError(error);
    }
    // pg emits 'error' on a checked-out client whose connection breaks between statements, and the pool
    // listens only while it is idle: without this, that would crash the process. The statement that
    // follows fails with store_connection_lost instead.
    if (!this.#listening.has(client)) {
      this.#listening.add(client);
      client.on('error', ignore);
    }
    return client;
  }

  /** One statement on any pooled connection. */
  async #query(statement: Statement, values: unknown[], rowMode?: 'array'): Promise<QueryResult<Row>> {
    return this.#op(async () => {
      const client = await this.#connect();
      try {
        return await this.#exec(client, statement, values, rowMode);
      } finally {
        // pg-pool drops a connection that broke during the query instead of reusing it.
        client.release();
      }
    });
  }

  async #rows(statement: Statement, values: unknown[]): Promise<Row[]> {
    return (await this.#query(statement, values)).rows;
  }

  /**
   * BEGIN, work, COMMIT on one pooled connection; ROLLBACK when work throws. When changed(result) says
   * the work changed data, the version bump and COMMIT travel in one round trip, unless the work sent
   * the bump itself with its topics' (bumpTopicsAndVersion) and said so with `bumped`. Statements the
   * work sent and handed to `defer` instead of awaiting go in that round trip too, ahead of COMMIT: a
   * failure of any of them fails the transaction (the server then answers COMMIT with ROLLBACK).
   */
  async #transaction<T>(
    work: (client: PoolClient, defer: (sent: Promise<unknown>) => void, bumped: () => void) => Promise<T>,
    changed: (result: T) => boolean,
  ): Promise<T> {
    const client = await this.#connect();
    let broken: Error | undefined;
    try {
      // Not awaited: the connection pipelines, so the work's first statements go with BEGIN; a BEGIN that
      // fails fails them too, and is awaited before COMMIT.
      const begun = client.query('BEGIN');
      begun.catch(() => undefined);
      const deferred: Promise<unknown>[] = [];
      let versionSent = false;
      const result = await work(
        client,
        (sent) => {
          sent.catch(() => undefined);
          deferred.push(sent);
        },
        () => {
          versionSent = true;
        },
      );
      const commit = client.query(changed(result) && !versionSent ? `${BUMP_VERSION}; COMMIT` : 'COMMIT');
      commit.catch(() => undefined);
      await begun;
      // The first deferred failure is the transaction's error; COMMIT then answered ROLLBACK or an error.
      await Promise.all(deferred);
      // PostgreSQL answers COMMIT of a failed transaction with ROLLBACK, not with an error.
      if (lastCommand(await commit) !== 'COMMIT') {
        throw new StoreError('store_rolled_back', 'the transaction was rolled back by the server', false);
      }
      this.#version = undefined;
      return result;
    } catch (error) {
      // A connection that cannot even roll back is dropped from the pool rather than reused.
      await client.query('ROLLBACK').catch((rollbackError: unknown) => {
        broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
      });
      // Statements' errors are translated already; the work's own errors reach the caller unchanged.
      throw error;
    } finally {
      client.release(broken);
    }
  }

  indexerTransaction<T>(fn: (tx: IndexerTx) => Promise<T>): Promise<T> {
    return this.#op(() => {
      // One indexer transaction at a time in this process, as with SQLite's single writer.
      let appended = false;
      const run = async () => {
        appended = false;
        const result = await this.#transaction(
          async (client, defer, bumped) => {
            const tx = this.#indexerTx(client, defer, bumped);
            try {
              const result = await fn(tx.api);
              await tx.flush();
              appended = tx.appended();
              return result;
            } finally {
              tx.finish();
            }
          },
          () => true,
        );
        if (appended) this.#nodeEvents.emit();
        return result;
      };
      const next = this.#queue.then(run, run);
      this.#queue = next.catch(() => undefined);
      return next;
    });
  }

  /**
   * The IndexerTx of one transaction, bound to its connection and unusable once it ends. The connection
   * pipelines: a write whose outcome the caller does not need is sent and not awaited, so a page of
   * events costs a few round trips instead of one per event. The server runs the statements in order; the
   * first failure is thrown by the next call that waits for an answer, or by flush() before COMMIT.
   */
  #indexerTx(
    client: PoolClient,
    defer: (sent: Promise<unknown>) => void,
    bumped: () => void,
  ): {
    api: IndexerTx;
    flush: () => Promise<void>;
    finish: () => void;
    appended: () => boolean;
  } {
    let open = true;
    let appended = false;
    /** Topics of cached reads this transaction changed (flushed before COMMIT). */
    const touched = new Set<string>();
    let failure: unknown;
    let last: Promise<unknown> = Promise.resolve();
    /** The claim contexts of the page's stacks, when read ahead. */
    const ahead = new ReadAhead();
    /** Whether each stack the page creates existed: read ahead, or asked, then kept as it creates them. */
    const present = new Map<string, boolean>();
    /**
     * Writes not yet sent, in stages. Of the writes that wait, only putStack, putTicket and the claims touch
     * a stack's rows (its stack, ticket and attestation requests), only putSubscription a subscription's,
     * only putAttesterRewards a reward's, and none reads what another writes (putStack reads its task, but
     * putTask does not wait). So a write may go before earlier ones with other keys (they commute), never
     * before one with its own: it joins the stage after the last that holds its key. Each kind of a stage
     * goes as one statement, stage after stage, before any statement that does not wait.
     */
    let stages: Stage[] = [];
    /** The stage of the last waiting write of each key. */
    const stageOf = new Map<string, number>();
    let waiting = 0;
    const wait = <K extends keyof Stage>(
      kind: K,
      keys: readonly string[],
      rows: readonly Stage[K][number][],
    ): void => {
      usable();
      let at = 0;
      for (const key of keys) at = Math.max(at, (stageOf.get(key) ?? -1) + 1);
      for (const key of keys) stageOf.set(key, at);
      const stage = stages[at] ?? newStage();
      stages[at] = stage;
      (stage[kind] as unknown[]).push(...rows);
      waiting += rows.length;
      if (waiting >= WAITING_ROWS) sendWaiting();
    };
    const sendWaiting = (): void => {
      if (waiting === 0) return;
      const sending = stages;
      stages = [];
      stageOf.clear();
      waiting = 0;
      for (const stage of sending) {
        for (const [statement, values] of stageStatements(stage)) void sendNow(statement, values);
      }
    };
    /** Refuses a statement once the transaction has ended, or once one of its statements failed. */
    const usable = (): void => {
      if (!open) {
        throw new StoreError('store_transaction_ended', 'the indexer transaction has already ended', false);
      }
      if (failure !== undefined) throw failure;
    };
    const send = (statement: Statement, values: unknown[]): Promise<QueryResult<Row>> => {
      usable();
      // Statements run in the order of the calls: the writes waiting go first.
      sendWaiting();
      return sendNow(statement, values);
    };
    const sendNow = (statement: Statement, values: unknown[]): Promise<QueryResult<Row>> => {
      const sent = this.#exec(client, statement, values);
      last = sent.catch((error: unknown) => {
        failure ??= error;
      });
      return sent;
    };
    /** Sends a statement whose outcome is not needed. */
    const write = async (statement: Statement, values: unknown[]): Promise<void> => {
      void send(statement, values);
    };
    /** Sends a statement and waits for its answer (and so for every statement sent before it). */
    const run = async (statement: Statement, values: unknown[]): Promise<QueryResult<Row>> => {
      const sent = send(statement, values);
      await last;
      if (failure !== undefined) throw failure;
      return sent;
    };
    const api: IndexerTx = {
      claimEvents: async (keys) => {
        const unique = [...new Set(keys)];
        const fresh = new Set<string>();
        if (unique.length === 0) return fresh;
        for (const row of (await run(S.claimEvents, [unique])).rows) fresh.add(row.event_key as string);
        return fresh;
      },
      putTask: async (t: NewTask) => {
        usable();
        ahead.putTask(t);
        touched.add(topics.tasks);
        await write(S.putTask, [
          enc(t.task_small_id),
          t.task_id,
          t.role,
          t.model_name,
          t.security_level,
          t.minimum_reputation_score,
        ]);
      },
      deprecateTask: async (id, epoch) => {
        touched.add(topics.tasks);
        return ((await run(S.deprecateTask, [enc(epoch), enc(id)])).rowCount ?? 0) > 0;
      },
      removeTask: async (id, epoch) => {
        touched.add(topics.tasks);
        // Its subscriptions turn invalid: each subscriber's list changes.
        for (const row of (await run(S.subscribersOf, [enc(id)])).rows) {
          touched.add(topics.subscriptions(dec(row.node_small_id)));
        }
        return ((await run(S.removeTask, [enc(epoch), enc(id)])).rowCount ?? 0) > 0;
      },
      putNode: async (id, badgeId, address) => {
        await write(S.putNode, [enc(id), badgeId, address]);
      },
      putNodeModel: async (id, model, echelon) => {
        await write(S.putNodeModel, [enc(id), model, enc(echelon)]);
      },
      putSubscription: async (s) => {
        wait('subscriptions', [`subscription:${enc(s.node_small_id)}:${enc(s.task_small_id)}`], [s]);
        touched.add(topics.subscriptions(s.node_small_id));
      },
      deleteSubscription: async (node, task) => {
        touched.add(topics.subscriptions(node));
        return ((await run(S.deleteSubscription, [enc(node), enc(task)])).rowCount ?? 0) > 0;
      },
      putStack: async (s: NewStack) => {
        await api.createStack(s);
      },
      createStack: async (s: NewStack) => {
        usable();
        const id = enc(s.stack_small_id);
        const existed = present.get(id) ?? (await run(S.stacksPresent, [[id]])).rows.length > 0;
        present.set(id, true);
        if (existed) return false;
        wait('stacks', [`stack:${id}`], [s]);
        ahead.putStack(s);
        touched.add(topics.stacks(s.selected_node_id));
        return true;
      },
      putTicket: async (t: TrySettle, epoch: U64 | undefined) => {
        wait('tickets', [`stack:${enc(t.stack_small_id)}`], [{ ticket: t, epoch }]);
        touched.add(topics.stacks(t.selected_node_id)).add(topics.tickets(t.selected_node_id));
      },
      recordAttestation: async (a: Attestation): Promise<AttestationOutcome> => {
        // The ticket row stays locked until commit: another daemon's attestation for it waits, then reads
        // this one's slots.
        const [row] = (await run(S.lockTicket, [enc(a.stack_small_id)])).rows;
        if (row) touched.add(topics.tickets(dec(row.selected_node_id)));
        if (!row) return 'no_ticket';
        const attested = attestedRow(row, a);
        if (attested === 'not_requested') return attested;
        ahead.setAttested(a.stack_small_id, attested.attested);
        await write(S.attest, [attested.leaves, attested.attested, enc(a.stack_small_id)]);
        await write(S.requestAttested, [enc(a.stack_small_id), enc(a.attestation_node_id)]);
        return 'applied';
      },
      settleTicket: async (t: TicketSettled) => {
        touched.add(topics.tickets(t.selected_node_id));
        await write(S.settleTicket, [
          enc(t.stack_small_id),
          enc(t.selected_node_id),
          enc(t.num_claimed_compute_units),
          idList(t.requested_attestation_nodes),
          t.committed_stack_proof,
          enc(t.dispute_settled_at_epoch),
        ]);
      },
      readAhead: async (stackIds, taskIds, createdIds) => {
        const created = [...new Set(createdIds.map(enc))].filter((id) => !present.has(id));
        if (stackIds.length === 0 && created.length === 0) return;
        const [ids, tasks] = [stackIds.map(enc), taskIds.map(enc)];
        const changes = ahead.changes;
        // Pipelined: one round trip, and each read sees everything the transaction sent before it.
        const [existing, stacks, tickets, levels] = await Promise.all([
          created.length === 0 ? undefined : send(S.stacksPresent, [created]),
          ids.length === 0 ? undefined : send(S.stacksTerms, [ids]),
          ids.length === 0 ? undefined : send(S.ticketsAttesters, [ids]),
          tasks.length === 0 ? undefined : send(S.taskLevels, [tasks]),
        ]);
        if (existing) {
          const found = new Set(existing.rows.map((r) => enc(dec(r.stack_small_id))));
          // A stack created while the read was on its way is known already.
          for (const id of created) if (!present.has(id)) present.set(id, found.has(id));
        }
        if (!stacks || !tickets) return;
        // Rows that a write may have changed on their way are left out: those stacks are read when asked.
        if (ahead.changes !== changes) return;
        ahead.add(ids, tasks, stacks.rows, tickets.rows, levels?.rows ?? []);
      },
      claimContext: async (id) => {
        usable();
        const known = ahead.context(id);
        if (known) return known;
        // Pipelined: both reads in one round trip, after everything the page sent before them.
        const stack = send(S.stackTerms, [enc(id)]);
        const [ticket] = (await run(S.ticketAttesters, [enc(id)])).rows;
        const [terms] = (await stack).rows;
        return {
          terms: terms ? rows.terms(terms) : undefined,
          selected_node_id: terms ? dec(terms.selected_node_id) : null,
          already_attested: ticket ? parseIdList(ticket.already_attested_nodes as string).map(dec) : [],
        };
      },
      claimTicket: async (c: TicketClaimed, record: ClaimRecord) => {
        const claim: Claim = {
          claim: c,
          attesters: idList(c.attestation_nodes),
          path: 'settlement_ticket',
          record,
        };
        wait('claims', [`stack:${enc(c.stack_small_id)}`], [claim]);
        touched.add(topics.tickets(c.selected_node_id)).add(topics.stacks(c.selected_node_id));
      },
      putDispute: async (d: Dispute, epoch: U64 | undefined) => {
        touched
          .add(topics.tickets(d.original_node_id))
          .add(topics.disputes(d.original_node_id))
          .add(topics.disputes(d.attestation_node_id));
        // Locked until commit, as an attestation locks it: a concurrent writer reads this one's result.
        const [ticket] = (await run(S.lockDisputedTicket, [enc(d.stack_small_id)])).rows;
        const attesting = ticket && disputedAttestationRow(ticket, dec, d, epoch);
        if (attesting) {
          ahead.setAttested(d.stack_small_id, attesting.attested);
          await write(S.disputeAttested, [attesting.attested, enc(d.stack_small_id)]);
          await write(S.requestAttested, [enc(d.stack_small_id), enc(d.attestation_node_id)]);
        }
        await write(S.putDispute, [
          enc(d.stack_small_id),
          enc(d.attestation_node_id),
          d.attestation_commitment,
          enc(d.original_node_id),
          d.original_commitment,
        ]);
      },
      claimStack: async (c: StackClaimed, record: ClaimRecord) => {
        const claim: Claim = { claim: c, attesters: '[]', path: 'confidential_compute', record };
        wait('claims', [`stack:${enc(c.stack_small_id)}`], [claim]);
        touched.add(topics.tickets(c.selected_node_id)).add(topics.stacks(c.selected_node_id));
      },
      putAttesterRewards: async (rewards) => {
        if (rewards.length === 0) return;
        wait(
          'rewards',
          rewards.map((r) => `reward:${enc(r.stack_small_id)}:${r.slot}`),
          rewards,
        );
        for (const r of rewards) touched.add(topics.rewards(r.node_small_id));
      },
      saveChainState: async ({ epoch, parameters }) => {
        await write(S.bumpChainTopic, [
          encNullable(epoch),
          parameters === undefined ? null : encodeParameters(parameters),
        ]);
        await write(S.saveChainState, [
          encNullable(epoch),
          parameters === undefined ? null : encodeParameters(parameters),
          new Date().toISOString(),
        ]);
      },
      appendNodeEvents: async (events) => {
        if (events.length === 0) return;
        for (const [statement, values] of this.#appendStatements(events)) await write(statement, values);
        appended = true;
      },
      listBecomingClaimable: async (after, upTo) =>
        (await run(S.becomingClaimable, [after === null ? '-1' : enc(after), enc(upTo)])).rows.map(
          rows.claimableOf,
        ),
      saveCursor: async (source: string, cursor: string | null, n: IndexerCounts) => {
        await write(S.saveCursor, [
          source,
          cursor,
          n.applied,
          n.duplicate,
          n.ignored,
          n.unknown,
          n.malformed,
          n.orphaned,
          new Date().toISOString(),
        ]);
      },
    };
    return {
      api,
      flush: async () => {
        if (failure === undefined) sendWaiting();
        await last;
        if (failure !== undefined) throw failure;
        if (touched.size > 0) {
          // Goes with COMMIT, in its round trip: the topics' rows and the store's version row, which every
          // writer of every daemon on the database bumps, are locked only for the commit itself.
          defer(this.#exec(client, S.bumpTopicsAndVersion, [[...touched]]));
          touched.clear();
          bumped();
        }
      },
      finish: () => {
        open = false;
      },
      appended: () => appended,
    };
  }

  /** The statements that record node events (with the next ids) and notify the listening processes. */
  #appendStatements(events: readonly NewNodeEvent[]): [Statement, unknown[]][] {
    const now = Date.now();
    return [
      [
        S.appendNodeEvents,
        [
          events.map((e) => e.at ?? now),
          events.map((e) => e.type),
          events.map((e) => encNullable(e.node_small_id)),
          events.map((e) => encNullable(e.other_node_small_id)),
          events.map(eventData),
        ],
      ],
      [S.notifyNodeEvents, []],
    ];
  }

  /** Runs the statements of #appendStatements on a transaction's connection. */
  async #appendOn(client: ClientBase, events: readonly NewNodeEvent[]): Promise<boolean> {
    if (events.length === 0) return false;
    for (const [statement, values] of this.#appendStatements(events))
      await this.#exec(client, statement, values);
    return true;
  }

  async getCursor(source: string): Promise<CursorState | undefined> {
    const [row] = await this.#rows(S.getCursor, [source]);
    return row ? rows.cursor(row) : undefined;
  }

  async listTasks(page: Page = {}): Promise<Task[]> {
    return (await this.#rows(S.tasks, pageArgs(page))).map(rows.task);
  }

  async listSubscriptions(node: U64, page: Page = {}): Promise<NodeSubscription[]> {
    return (await this.#rows(S.subscriptions, [enc(node), ...pageArgs(page)])).map(rows.subscription);
  }

  async listStacks(node: U64, minFillFraction?: number, page: Page = {}): Promise<Stack[]> {
    const found =
      minFillFraction === undefined
        ? await this.#rows(S.stacks, [enc(node), ...pageArgs(page)])
        : await this.#rows(S.stacksFilled, [enc(node), minFillFraction, ...pageArgs(page)]);
    return found.map(rows.stack);
  }

  async listStacksJson(
    node: U64,
    minFillFraction?: number,
    page: Page = {},
    seenVersion?: number,
  ): Promise<JsonRows> {
    // A node's whole list is kept between reads (#nodeList), and a filtered list is chosen from it. So is a
    // page while a list is kept (bringing it up to date reads only the rows changed since); else the page is
    // read, not the node's every stack.
    const paged = page.limit !== undefined || page.after !== undefined;
    if (!paged || this.#nodeLists.get(topics.stacks(node)) !== undefined) {
      const { state, list } = await this.#nodeList(node, seenVersion);
      return listSlice(state, list, minFillFraction, page);
    }
    // One row past the limit tells whether more remain; the rows as arrays, for the JSON built from them.
    const probe = page.limit === undefined ? page : { ...page, limit: page.limit + 1 };
    const [whole, state, values] =
      minFillFraction === undefined
        ? [S.stacks, S.stacksState, [enc(node), ...pageArgs(probe)]]
        : [S.stacksFilled, S.stacksFilledState, [enc(node), minFillFraction, ...pageArgs(probe)]];
    // Only the columns that change, when the others of every stack are kept (see KeptStacks).
    const ready = this.#keptStacks.json(await this.#arrays(state, values), page.limit);
    if (ready) return ready;
    return stacksJson(await this.#arrays(whole, values), page.limit, this.#keptStacks);
  }

  /**
   * A node's whole stack list, encoded, kept with the snapshot it was read under (#nodeLists). Another
   * daemon may have changed any row since, so each read (unless the caller saw a topic version the list
   * already shows) asks for the rows whose last writer that snapshot did not see, in one statement that
   * also says its own snapshot: the kept stacks among them are restated and patched in, the new ones
   * added in order. A kept list is never changed: a cache or a socket may hold its body, and a concurrent
   * read may be patching it too.
   */
  async #nodeList(node: U64, seenVersion: number | undefined): Promise<NodeList> {
    const topic = topics.stacks(node);
    const held = this.#nodeLists.get(topic);
    const kept = held === undefined ? undefined : this.#materialized(topic, held);
    if (kept !== undefined && seenVersion !== undefined && kept.version >= seenVersion) {
      // The list shows at least the version the caller read before asking: nothing to read.
      this.#nodeLists.keep(topic, kept);
      return kept;
    }
    const found =
      kept === undefined
        ? await this.#arrays(S.nodeList, [enc(node), topic])
        : await this.#arrays(S.nodeListSince, [enc(node), topic, kept.snapshot]);
    const head = found[0]!;
    const [snapshot, version, removed] = [head[0] as string, Number(head[1] ?? 0), head[2] as string];
    const rows = head[4] === null ? [] : found.map((r) => r.slice(3));
    if (kept !== undefined && removed !== kept.removed) {
      // Rows may have left the list, which no row read says: read it whole.
      this.#nodeLists.forget(topic);
      return this.#nodeList(node, undefined);
    }
    const list =
      kept === undefined
        ? this.#builtList(snapshot, version, removed, rows)
        : this.#patchedList(kept, snapshot, version, rows);
    // Concurrent reads may finish out of order: keep the newest.
    const current = this.#nodeLists.get(topic);
    if (current === undefined || current.version <= list.version) this.#nodeLists.keep(topic, list);
    return list;
  }

  /** A list from whole rows (STACK_COLUMNS, as arrays, in order). */
  #builtList(snapshot: string, version: number, removed: string, rows: unknown[][]): NodeList {
    const state = rows.map(stateOf);
    return {
      snapshot,
      version,
      removed,
      state,
      index: listIndex(state),
      list: joinFragments(rows.map(stackFragment)),
    };
  }

  /** The kept list with these rows (whole, in order) written in: changed ones restated, new ones added. */
  #patchedList(kept: NodeList, snapshot: string, version: number, rows: unknown[][]): NodeList {
    const changed = new Map<number, unknown[]>();
    const added: unknown[][] = [];
    for (const row of rows) {
      const at = kept.index.get(digitsOf(row[1]));
      if (at === undefined) {
        added.push(row);
        continue;
      }
      const r = stateOf(row);
      if (sameState(r, kept.state[at]!)) continue;
      changed.set(at, r);
    }
    const base = { snapshot, version, removed: kept.removed };
    if (added.length === 0) {
      if (changed.size === 0) return { ...base, state: kept.state, index: kept.index, list: kept.list };
      return { ...base, index: kept.index, ...restatedList(kept, changed) };
    }
    // New stacks (an indexer page): appended, or merged in id order with the kept ones.
    return { ...base, ...mergedList(kept, changed, added) };
  }

  /** A read whose rows come as arrays of values. */
  async #arrays(statement: Statement, values: unknown[]): Promise<unknown[][]> {
    return (await this.#query(statement, values, 'array')).rows as unknown as unknown[][];
  }

  async listClaimedStacks(node: U64, page: Page = {}): Promise<StackSettlementTicket[]> {
    return (await this.#rows(S.claimed, [enc(node), ...pageArgs(page)])).map(rows.ticket);
  }

  async listDisputesAgainst(node: U64, page: Page = {}): Promise<StackAttestationDispute[]> {
    return (await this.#rows(S.disputesAgainst, [enc(node), ...pageArgs(page)])).map(rows.dispute);
  }

  async listDisputesOwn(node: U64, page: Page = {}): Promise<StackAttestationDispute[]> {
    return (await this.#rows(S.disputesOwn, [enc(node), ...pageArgs(page)])).map(rows.dispute);
  }

  readonly checkBy = 'topics';

  /** The topics asked for in this event-loop turn, and their versions once read (topicVersions). */
  #topicBatch: { names: Set<string>; found: Promise<Map<string, number>> } | undefined;

  /**
   * Every topic asked for in one event-loop turn is read with one statement, sent after the turn's I/O
   * (setImmediate): under 50 readers that is one round trip a turn instead of one a request. The batch is
   * closed before its statement is sent, so a caller is never answered by a read that began before it
   * asked (the versions are read after the call, as the response cache needs).
   */
  topicVersions(names: readonly string[]): Promise<number[]> {
    let batch = this.#topicBatch;
    if (batch === undefined) {
      const asked = new Set<string>();
      const found = new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
        if (this.#topicBatch?.names === asked) this.#topicBatch = undefined;
        const names = [...asked];
        if (names.length === 0) return new Map<string, number>();
        const rows =
          names.length <= TOPIC_VERSIONS_IN.length
            ? await this.#rows(TOPIC_VERSIONS_IN[names.length - 1]!, names)
            : await this.#rows(S.topicVersions, [names]);
        return new Map(rows.map((r) => [r.topic as string, Number(r.version)]));
      });
      batch = { names: asked, found };
      this.#topicBatch = batch;
    }
    for (const name of names) batch.names.add(name);
    return batch.found.then((found) => names.map((name) => found.get(name) ?? 0));
  }

  async storeId(): Promise<string> {
    this.#storeId ??= this.#rows(S.storeId, []).then(([row]) => String(row?.store_id));
    return this.#storeId;
  }

  addStackUsage(
    stackSmallId: U64,
    computeUnits: U64,
    requestHash: Uint8Array | undefined,
    nowMs: number,
    ownNodes?: readonly U64[],
  ): Promise<UsageOutcome> {
    return this.#usage.submit({ stackSmallId, computeUnits, requestHash, nowMs, ownNodes });
  }

  /**
   * Usage reports that arrive while earlier ones are being written go together in the next transaction
   * (group-commit.ts). Each report's transaction held its node's topic row and the store's version row
   * until its COMMIT was flushed, so reports on one node queued one flush behind the other; a group takes
   * those locks, and pays the flush, once.
   */
  readonly #usage = new GroupCommit<UsageReport, UsageOutcome>((reports) =>
    this.#op(async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await this.#recordUsage(reports);
        } catch (error) {
          // What this process kept of these stacks is not trusted after a failure: the next attempt
          // reads them. A failed guard only means another writer came first, so it is not an attempt.
          for (const report of reports) this.#usageStates.delete(enc(report.stackSmallId));
          if (isUsageGuardFailure(error)) {
            attempt -= 1;
            continue;
          }
          // The group locks its stacks in id order, an indexer page in event order: should the two ever
          // deadlock, the server rolls one back, and the group is simply written again.
          const translated = fromPostgresError(error);
          const code = translated instanceof StoreError ? translated.code : undefined;
          if (
            attempt >= USAGE_ATTEMPTS ||
            (code !== 'store_deadlock' && code !== 'store_serialization_failure')
          ) {
            throw error;
          }
        }
      }
    }),
  );

  /**
   * One transaction for a group of reports. Its stacks and hashes are locked and read in one round trip,
   * and the writes go with COMMIT in a second. When this process's own last group left every one of the
   * stacks (#usageStates), the reports are computed from what it left, and the writes go with BEGIN and
   * COMMIT in one round trip, each guarded: it fails the transaction unless its rows still hold those
   * values. A guard that fails (another daemon's report, an indexer page in between) sends the group
   * again the first way.
   */
  async #recordUsage(reports: UsageReport[]): Promise<UsageOutcome[]> {
    const ids = [...new Set(reports.map((r) => enc(r.stackSmallId)))].sort(compareDigits);
    const kept = ids.map((id) => this.#usageStates.get(id));
    const known = kept.every((state) => state !== undefined) ? (kept as UsageState[]) : undefined;
    let current = new Map<string, Row>();
    let records = new Map<string, Row>();
    let appended = false;
    /** What the group wrote, by node stacks topic: each stack's usage columns after it. */
    let written = new Map<string, Map<string, UsageColumns>>();
    let bumped: Promise<QueryResult> | undefined;
    const outcomes = await this.#transaction(
      async (client, defer, versionBumped): Promise<UsageOutcome[]> => {
        appended = false;
        written = new Map();
        if (known !== undefined) {
          current = new Map(ids.map((id, i) => [id, known[i]!.row]));
          records = new Map(ids.map((id, i) => [id, known[i]!.record]));
        } else {
          const [stacks, hashes] = await Promise.all([
            this.#exec(client, S.lockStacks, [ids]),
            this.#exec(client, S.lockHashes, [ids]),
          ]);
          // The rows as each report leaves them, for the next report on the same stack.
          current = new Map(stacks.rows.map((row) => [enc(dec(row.stack_small_id)), row]));
          records = new Map<string, Row>(hashes.rows.map((row) => [enc(dec(row.stack_small_id)), row]));
        }
        const out = reports.map((report): UsageOutcome => {
          const id = enc(report.stackSmallId);
          const row = current.get(id);
          if (!row) return { status: 'not_found' };
          const prior = records.get(id);
          const { outcome, write } = usageChange(dec, row, prior, report);
          // A refusal cannot be guarded (it writes nothing): the group is read and decided again.
          if (!write && known !== undefined) throw new UsageUnguarded();
          if (!write) return outcome;
          const { already, messages, fillPpm, record } = write;
          // Sent together with COMMIT (the connection pipelines): one round trip for all of them.
          if (write.events.length > 0) {
            for (const [statement, values] of this.#appendStatements(write.events)) {
              defer(this.#exec(client, statement, values));
            }
            appended = true;
          }
          const values = [
            id,
            enc(already),
            enc(messages),
            record.total_hash,
            enc(record.num_requests),
            fillPpm,
            report.nowMs,
          ];
          defer(
            known === undefined
              ? this.#exec(client, S.setUsage, values)
              : this.#exec(client, S.setUsageGuarded, [
                  ...values,
                  row.already_computed_units,
                  row.num_total_messages,
                  prior!.total_hash,
                  prior!.num_requests,
                ]),
          );
          const topic = topics.stacks(dec(row.selected_node_id));
          const stacks = written.get(topic) ?? new Map<string, UsageColumns>();
          stacks.set(id, { already: enc(already), messages: enc(messages) });
          written.set(topic, stacks);
          current.set(id, {
            ...row,
            already_computed_units: enc(already),
            num_total_messages: enc(messages),
          });
          records.set(id, { total_hash: record.total_hash, num_requests: enc(record.num_requests) });
          return outcome;
        });
        bumped = undefined;
        if (written.size > 0) {
          bumped = this.#exec(client, S.bumpTopicsAndVersionReturning, [[...written.keys()]]);
          defer(bumped);
          versionBumped();
        }
        return out;
      },
      (out) => out.some((outcome) => outcome.status === 'recorded'),
    );
    // Committed (or refused whole, with the guard passed): the stacks are as the group left them.
    if (this.#usageStates.size + ids.length > USAGE_STATES) this.#usageStates.clear();
    for (const id of ids) {
      const row = current.get(id);
      const record = records.get(id);
      if (row !== undefined && record !== undefined) this.#usageStates.set(id, { row, record });
    }
    if (appended) this.#nodeEvents.emit();
    // Committed: the bump answered (it went before COMMIT on the same connection).
    if (bumped !== undefined) {
      for (const row of (await bumped).rows) {
        const stacks = written.get(row.topic as string);
        if (stacks !== undefined) this.#patchOwnUsage(row.topic as string, Number(row.version), stacks);
      }
    }
    return outcomes;
  }

  /**
   * A node's kept list brought up to a usage group this process committed, without reading it again. The
   * topic's version after the group's bump is the list's plus one only when no other transaction changed
   * the node's stacks since the list's snapshot: every writer of a stack bumps its node's topic, under the
   * topic row's lock, in the same transaction. The list then differs from the database by exactly the
   * group's usage columns. Its snapshot stays the old one, so a later read since it reads the group's rows
   * again and finds them equal. Any other version leaves the list to be read (#nodeList).
   */
  #patchOwnUsage(topic: string, version: number, stacks: ReadonlyMap<string, UsageColumns>): void {
    const kept = this.#nodeLists.get(topic);
    if (kept === undefined || kept.version !== version - 1) return;
    // Every stack is checked before any is written: the pending rows are the entry's own, changed in place.
    for (const id of stacks.keys()) if (!kept.index.has(id)) return;
    // Added to in place, not copied per group: only #materialized reads the pending rows, in the same turn
    // as it takes the entry from #nodeLists, and it replaces the entry. A copy cost a busy node whose list
    // nobody read a Map of up to its every stack per group.
    const pending = kept.pending ?? new Map<number, unknown[]>();
    for (const [id, { already, messages }] of stacks) {
      const at = kept.index.get(id)!;
      // A pending row is this entry's own copy; a row of `state` may be shared with a body, so it is copied.
      const r = pending.get(at) ?? kept.state[at]!.slice();
      // The values as a read gives them (NUMERIC as decimal text), so that sameState holds for a re-read.
      r[1] = already;
      r[3] = messages;
      pending.set(at, r);
    }
    this.#nodeLists.keep(topic, { ...kept, version, pending });
  }

  /** A kept list with the rows its own usage groups left pending written in (kept in its place). */
  #materialized(topic: string, kept: NodeList): NodeList {
    if (kept.pending === undefined) return kept;
    const { pending, ...rest } = kept;
    const list: NodeList = { ...rest, ...restatedList(kept, pending) };
    if (this.#nodeLists.get(topic) === kept) this.#nodeLists.keep(topic, list);
    return list;
  }

  async putStackHash(stackSmallId: U64, totalHash: Uint8Array, numRequests: U64): Promise<void> {
    await this.#query(S.putStackHash, [enc(stackSmallId), totalHash, enc(numRequests)]);
    this.#version = undefined;
  }

  async getStackHash(stackSmallId: U64): Promise<{ total_hash: Uint8Array; num_requests: U64 } | undefined> {
    const [row] = await this.#rows(S.getStackHash, [enc(stackSmallId)]);
    // A copy: pg's Buffer may be a view into a shared pool, and callers compare plain Uint8Arrays.
    return row
      ? { total_hash: new Uint8Array(row.total_hash as Uint8Array), num_requests: dec(row.num_requests) }
      : undefined;
  }

  async getTask(taskSmallId: U64): Promise<Task | undefined> {
    const [row] = await this.#rows(S.getTask, [enc(taskSmallId)]);
    return row ? rows.task(row) : undefined;
  }

  async getNode(nodeSmallId: U64): Promise<NodeRecord | undefined> {
    const [row] = await this.#rows(S.getNode, [enc(nodeSmallId)]);
    if (row) {
      return {
        node_small_id: dec(row.node_small_id),
        badge_id: row.badge_id as string,
        sui_address: row.sui_address as string,
      };
    }
    const [named] = await this.#rows(S.nodeNamed, [enc(nodeSmallId)]);
    return named ? { node_small_id: nodeSmallId, badge_id: null, sui_address: null } : undefined;
  }

  async getStack(stackSmallId: U64): Promise<Stack | undefined> {
    const [row] = await this.#rows(S.getStack, [enc(stackSmallId)]);
    return row ? rows.stack(row) : undefined;
  }

  async getStackTerms(stackSmallId: U64): Promise<StackTerms | undefined> {
    const [row] = await this.#rows(S.stackTerms, [enc(stackSmallId)]);
    return row ? rows.terms(row) : undefined;
  }

  async getSubscription(nodeSmallId: U64, taskSmallId: U64): Promise<NodeSubscription | undefined> {
    const [row] = await this.#rows(S.getSubscription, [enc(nodeSmallId), enc(taskSmallId)]);
    return row ? rows.subscription(row) : undefined;
  }

  async countEligibleSubscribers(taskSmallId: U64, price: U64, units: U64): Promise<number> {
    const [row] = await this.#rows(S.eligibleSubscribers, [enc(taskSmallId), enc(price), enc(units)]);
    return Number(row?.n ?? 0);
  }

  async getTicket(stackSmallId: U64): Promise<StackSettlementTicket | undefined> {
    const [row] = await this.#rows(S.getTicket, [enc(stackSmallId)]);
    return row ? rows.ticket(row) : undefined;
  }

  async getChainState(): Promise<ChainState> {
    const [row] = await this.#rows(S.chainState, []);
    return rows.chainState(row);
  }

  async listLedger(node: U64): Promise<LedgerRow[]> {
    return (await this.#rows(S.ledger, [enc(node)])).map(rows.ledger);
  }

  async listAttesterRewards(node: U64): Promise<AttesterReward[]> {
    return (await this.#rows(S.rewards, [enc(node)])).map(rows.attesterReward);
  }

  async listSettleCandidates(node: U64, minFillPpm: number, idleBefore: number): Promise<OpenStack[]> {
    return (await this.#rows(S.settleCandidates, [enc(node), minFillPpm, idleBefore])).map(rows.openStack);
  }

  async oldestUsageAt(node: U64): Promise<number | null> {
    const [row] = await this.#rows(S.oldestUsage, [enc(node)]);
    return row?.at === null || row?.at === undefined ? null : Number(row.at);
  }

  async listClaimable(node: U64, epoch: U64): Promise<ClaimableTicket[]> {
    return (await this.#rows(S.claimable, [enc(node), enc(epoch)])).map(rows.claimable);
  }

  async listAttestationRequests(node: U64): Promise<AttestationRequest[]> {
    return (await this.#rows(S.requests, [enc(node)])).map(rows.attestationRequest);
  }

  async insertAutopilotAction(action: Omit<AutopilotAction, 'id'>): Promise<number> {
    const values = [
      action.at,
      action.updated_at,
      action.kind,
      enc(action.node_small_id),
      idList(action.stack_small_ids),
      action.status,
      action.reason,
      encNullable(action.node_fee_amount),
      encNullable(action.gas_estimate),
      JSON.stringify(action.tx_digests),
      action.error,
    ];
    return this.#op(async () => {
      const id = await this.#transaction(
        async (client) => {
          const [row] = (await this.#exec(client, S.insertAction, values)).rows;
          await this.#appendOn(client, [autopilotEvent(rows.autopilotAction(row!))]);
          return Number(row!.id);
        },
        () => false,
      );
      this.#nodeEvents.emit();
      return id;
    });
  }

  async updateAutopilotAction(
    id: number,
    change: Pick<AutopilotAction, 'status' | 'tx_digests' | 'error' | 'updated_at'> &
      Partial<Pick<AutopilotAction, 'node_fee_amount'>>,
  ): Promise<void> {
    const values = [
      change.status,
      JSON.stringify(change.tx_digests),
      change.error,
      change.updated_at,
      encNullable(change.node_fee_amount),
      id,
    ];
    return this.#op(async () => {
      const appended = await this.#transaction(
        async (client) => {
          const [row] = (await this.#exec(client, S.updateAction, values)).rows;
          return row ? this.#appendOn(client, [autopilotEvent(rows.autopilotAction(row))]) : false;
        },
        () => false,
      );
      if (appended) this.#nodeEvents.emit();
    });
  }

  appendNodeEvents(events: readonly NewNodeEvent[]): Promise<void> {
    return this.#op(async () => {
      const appended = await this.#transaction(
        (client) => this.#appendOn(client, events),
        () => false,
      );
      if (appended) this.#nodeEvents.emit();
    });
  }

  async listNodeEvents(query: NodeEventQuery): Promise<NodeEventRow[]> {
    return (
      await this.#rows(S.nodeEvents, [
        query.after,
        query.nodes === null ? null : query.nodes.map(enc),
        query.types,
        query.limit,
      ])
    ).map(rows.nodeEvent);
  }

  async nodeEventBounds(): Promise<{ oldest: number | null; newest: number }> {
    const [row] = await this.#rows(S.nodeEventBounds, []);
    return {
      oldest: row?.oldest === null || row?.oldest === undefined ? null : Number(row.oldest),
      newest: Number(row?.newest ?? 0),
    };
  }

  async pruneNodeEvents(before: number, keep: number): Promise<number> {
    return (await this.#query(S.pruneEvents, [before, keep])).rowCount ?? 0;
  }

  /**
   * Listeners hear this process's commits at once, and other processes' through LISTEN on a session of
   * its own (opened with the first listener, reopened with back-off when it drops; each reopening tells
   * the listeners, who read what they may have missed).
   */
  onNodeEvents(listener: () => void): () => void {
    const off = this.#nodeEvents.on(listener);
    this.#listener ??= this.#listen(0);
    return off;
  }

  async #listen(failures: number): Promise<void> {
    if (this.#closing !== undefined) return;
    try {
      const session = await this.#session();
      session.on('notification', () => this.#nodeEvents.emit());
      await session.query('LISTEN node_events');
      if (failures > 0) this.#nodeEvents.emit();
      session.once('end', () => {
        if (this.#closing === undefined) this.#listener = this.#listen(1);
      });
    } catch {
      const delay = Math.min(30_000, 500 * 2 ** Math.min(failures, 6));
      await new Promise((resolve) => setTimeout(resolve, delay).unref());
      this.#listener = this.#listen(failures + 1);
    }
  }

  async listAutopilotActions(options: { limit: number; pending?: boolean }): Promise<AutopilotAction[]> {
    return (await this.#rows(options.pending ? S.pendingActions : S.actions, [options.limit])).map(
      rows.autopilotAction,
    );
  }

  async hasEvents(events: readonly EventLookup[]): Promise<boolean> {
    const keys = [...new Set(events.map((e) => e.key))];
    if (keys.length === 0) return this.#op(async () => true);
    // A stack's creation is recorded by its row (IndexerTx.createStack); before migration 0010, by its key.
    const stacks = [
      ...new Set(events.flatMap((e) => (e.createdStack === undefined ? [] : [enc(e.createdStack)]))),
    ];
    const [claimed, present] = await Promise.all([
      this.#rows(S.eventsClaimed, [keys]),
      stacks.length === 0 ? [] : this.#rows(S.stacksPresent, [stacks]),
    ]);
    const claimedKeys = new Set(claimed.map((r) => r.event_key as string));
    const presentStacks = new Set(present.map((r) => enc(dec(r.stack_small_id))));
    return events.every(
      (e) =>
        claimedKeys.has(e.key) || (e.createdStack !== undefined && presentStacks.has(enc(e.createdStack))),
    );
  }

  reserveIdempotencyKey(
    key: string,
    requestHash: string,
    nowMs: number,
  ): Promise<'reserved' | IdempotencyRecord> {
    let changed = false;
    return this.#op(() =>
      this.#transaction(
        async (client): Promise<'reserved' | IdempotencyRecord> => {
          const reserve = () => this.#exec(client, S.reserveIdempotency, [key, requestHash, nowMs]);
          // Pipelined: the expiry runs first, then the insert, in one round trip.
          const [expired, inserted] = await Promise.all([
            this.#exec(client, S.expireIdempotency, [nowMs - IDEMPOTENCY_TTL_MS]),
            reserve(),
          ]);
          changed = (expired.rowCount ?? 0) > 0;
          // ON CONFLICT waits for a concurrent reservation of the key to commit or roll back. A holder
          // released between the insert and the read is rare: try again, a few times.
          let reserved = inserted.rowCount === 1;
          for (let attempt = 0; !reserved && attempt < 3; attempt += 1) {
            const [row] = (await this.#exec(client, S.getIdempotency, [key])).rows;
            if (row) {
              return {
                request_hash: row.request_hash as string,
                status: row.status as number,
                response: (row.response as string | null) ?? null,
                created_at: Number(row.created_at),
              };
            }
            reserved = (await reserve()).rowCount === 1;
          }
          if (reserved) {
            changed = true;
            return 'reserved';
          }
          throw new StoreError('store_busy', `the Idempotency-Key ${key} keeps changing hands`, true);
        },
        () => changed,
      ),
    );
  }

  async completeIdempotencyKey(key: string, status: number, response: string): Promise<void> {
    await this.#query(S.completeIdempotency, [status, response, key]);
    this.#version = undefined;
  }

  async releaseIdempotencyKey(key: string): Promise<void> {
    await this.#query(S.releaseIdempotency, [key]);
    this.#version = undefined;
  }

  dataVersion(): Promise<string> {
    // The store_version row, bumped in the same transaction as every change by any process sharing the
    // database (see 0001-initial.sql): one indexed single-row read. Requests within one event-loop turn
    // share one read (as on SQLite); this process's own commits forget it at once.
    if (this.#version === undefined) {
      const read = this.#rows(S.dataVersion, []).then(([row]) => String(row?.version));
      this.#version = read;
      const forget = () => {
        if (this.#version === read) this.#version = undefined;
      };
      read.then(() => setImmediate(forget), forget);
    }
    return this.#version;
  }

  /**
   * A connection of its own, outside the pool: a session-level advisory lock lives exactly as long as it,
   * so a process that dies frees its locks at once. It has no lock_timeout: waiting for a lock is its job.
   */
  async #session(): Promise<Client> {
    if (this.#closing !== undefined) throw closedError();
    const client = new Client({
      connectionString: this.#options.url,
      application_name: this.#options.applicationName ?? 'node-daemon',
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      keepAlive: true,
    });
    client.on('error', ignore);
    try {
      await client.connect();
    } catch (error) {
      await client.end().catch(ignore);
      throw connectError(error);
    }
    this.#sessions.add(client);
    client.once('end', () => this.#sessions.delete(client));
    return client;
  }

  async tryLease(name: string): Promise<Lease | undefined> {
    const client = await this.#session();
    let held: boolean;
    try {
      const { rows } = await client.query<{ held: boolean }>(
        `SELECT pg_try_advisory_lock(${advisoryKey(name)}) AS held`,
      );
      held = rows[0]?.held === true;
    } catch (error) {
      await client.end().catch(ignore);
      throw statementError(error);
    }
    if (!held) {
      await client.end().catch(ignore);
      return undefined;
    }
    let released = false;
    const heartbeat = setInterval(() => {
      client.query('SELECT 1').catch(() => client.end().catch(ignore));
    }, LEASE_HEARTBEAT_MS);
    heartbeat.unref();
    const lost = new Promise<void>((resolve) => {
      const gone = () => {
        clearInterval(heartbeat);
        if (!released) resolve();
      };
      client.once('end', gone);
      client.once('error', gone);
    });
    return {
      lost,
      release: async () => {
        released = true;
        clearInterval(heartbeat);
        // Ending the session releases its advisory locks.
        await client.end().catch(ignore);
      },
    };
  }

  async withLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const client = await this.#session();
    try {
      try {
        await client.query(`SELECT pg_advisory_lock(${advisoryKey(name)})`);
      } catch (error) {
        throw statementError(error);
      }
      return await fn();
    } finally {
      await client.end().catch(ignore);
    }
  }

  close(): Promise<void> {
    this.#closing ??= this.#shutDown();
    return this.#closing;
  }

  async #shutDown(): Promise<void> {
    await this.#queue;
    if (this.#active > 0) {
      await new Promise<void>((resolve) => {
        this.#idle = resolve;
      });
    }
    this.#closed = true;
    await Promise.all([...this.#sessions].map((client) => client.end().catch(ignore)));
    await this.#pool.end();
  }
}
