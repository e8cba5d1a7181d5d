import type { Client } from 'pg';
import { createTestDatabase, type TestDatabase, withClient } from './postgres.ts';

/**
 * A PostgreSQL database laid out like atoma-node's atoma-state after all its migrations
 * (upstream-daemon.md §2.1), and the statements its services run on it: the subscriber inserting what the
 * chain says, the inference service reserving a request's estimated units and correcting them after
 * (§3.5). Written from the reference, not copied from upstream. Everything here plays atoma-node: the
 * daemon under test only reads.
 */

/** atoma-state's tables as the daemon may meet them (no index on stacks.selected_node_id, as upstream). */
export const ATOMA_STATE_SCHEMA = `
CREATE TABLE tasks (
  task_small_id BIGINT PRIMARY KEY, task_id TEXT UNIQUE NOT NULL, role BIGINT NOT NULL, model_name TEXT,
  is_deprecated BOOLEAN NOT NULL, valid_until_epoch BIGINT, deprecated_at_epoch BIGINT,
  security_level BIGINT NOT NULL, minimum_reputation_score BIGINT);
CREATE TABLE node_subscriptions (
  task_small_id BIGINT NOT NULL, node_small_id BIGINT NOT NULL,
  price_per_one_million_compute_units BIGINT NOT NULL, max_num_compute_units BIGINT NOT NULL,
  valid BOOLEAN NOT NULL, PRIMARY KEY (task_small_id, node_small_id));
CREATE TABLE stacks (
  stack_small_id BIGINT PRIMARY KEY, owner_address TEXT NOT NULL, stack_id TEXT UNIQUE NOT NULL,
  task_small_id BIGINT NOT NULL, selected_node_id BIGINT NOT NULL, num_compute_units BIGINT NOT NULL,
  price_per_one_million_compute_units BIGINT NOT NULL, already_computed_units BIGINT NOT NULL,
  in_settle_period BOOLEAN NOT NULL, num_total_messages BIGINT NOT NULL,
  is_claimed BOOLEAN NOT NULL DEFAULT FALSE, user_refund_amount INTEGER NULL,
  is_confidential BOOLEAN NOT NULL DEFAULT FALSE, is_locked_for_claim BOOLEAN NOT NULL DEFAULT FALSE,
  CONSTRAINT check_compute_units CHECK (already_computed_units <= num_compute_units));
CREATE INDEX idx_stacks_owner_address ON stacks (owner_address);
CREATE INDEX idx_stacks_availability_check ON stacks
  (stack_small_id, owner_address, in_settle_period, is_claimed, is_locked_for_claim);
CREATE TABLE stack_settlement_tickets (
  stack_small_id BIGINT NOT NULL, selected_node_id BIGINT NOT NULL, num_claimed_compute_units BIGINT NOT NULL,
  requested_attestation_nodes TEXT NOT NULL, committed_stack_proofs BYTEA NOT NULL,
  stack_merkle_leaves BYTEA NOT NULL, dispute_settled_at_epoch BIGINT, already_attested_nodes TEXT NOT NULL,
  is_in_dispute BOOLEAN NOT NULL, user_refund_amount BIGINT NOT NULL, is_claimed BOOLEAN NOT NULL,
  PRIMARY KEY (stack_small_id, selected_node_id));
CREATE TABLE stack_attestation_disputes (
  stack_small_id BIGINT NOT NULL, attestation_commitment BYTEA NOT NULL, attestation_node_id BIGINT NOT NULL,
  original_node_id BIGINT NOT NULL, original_commitment BYTEA NOT NULL,
  PRIMARY KEY (stack_small_id, attestation_node_id));
CREATE TABLE nodes (node_small_id BIGINT PRIMARY KEY, node_id TEXT NOT NULL, node_sui_address TEXT NOT NULL);
`;

export interface AtomaStateDatabase extends TestDatabase {
  /** Runs fn on a connection of atoma-node's own (not the daemon's). */
  node<T>(fn: (client: Client) => Promise<T>): Promise<T>;
  /** The subscriber's insert of a stack the chain created (StackCreatedEvent: no usage yet). */
  addStack(stack: { id: number; node: number; units: number; confidential?: boolean }): Promise<void>;
  /** The inference service before a request: the estimate reserved, when it fits. */
  reserve(stack: number, estimated: number): Promise<void>;
  /** The inference service after it: the reservation corrected by estimated minus actual (may go down). */
  correct(stack: number, estimated: number, actual: number): Promise<void>;
  /** Every row of every table, as text: what the daemon must never change. */
  snapshot(): Promise<string>;
}

/** A fresh atoma-state database on the test server; undefined when the server is unreachable. */
export async function createAtomaState(): Promise<AtomaStateDatabase | undefined> {
  const db = await createTestDatabase();
  if (db === undefined) return undefined;
  const node = <T>(fn: (client: Client) => Promise<T>) => withClient(db.url, fn);
  await node((client) => client.query(ATOMA_STATE_SCHEMA));
  return {
    ...db,
    node,
    addStack: ({ id, node: selected, units, confidential = false }) =>
      node(async (client) => {
        await client.query(
          `INSERT INTO stacks (stack_small_id, owner_address, stack_id, task_small_id, selected_node_id,
            num_compute_units, price_per_one_million_compute_units, already_computed_units, in_settle_period,
            num_total_messages, is_confidential) VALUES ($1, '0xowner', $2, 1, $3, $4, 1000000, 0, false, 0, $5)`,
          [id, `0x${String(id).padStart(64, '0')}`, selected, units, confidential],
        );
      }),
    reserve: (stack, estimated) =>
      node(async (client) => {
        await client.query(
          `UPDATE stacks SET already_computed_units = already_computed_units + $2
            WHERE stack_small_id = $1 AND already_computed_units + $2 <= num_compute_units`,
          [stack, estimated],
        );
      }),
    correct: (stack, estimated, actual) =>
      node(async (client) => {
        await client.query(
          `UPDATE stacks SET already_computed_units = already_computed_units - ($2::bigint - $3::bigint),
            num_total_messages = num_total_messages + CASE WHEN $3::bigint > 0 THEN 1 ELSE 0 END,
            is_locked_for_claim = is_confidential
              AND (already_computed_units - ($2::bigint - $3::bigint))::float8 / num_compute_units > 0.95
            WHERE stack_small_id = $1`,
          [stack, estimated, actual],
        );
      }),
    snapshot: () =>
      node(async (client) => {
        const tables = await client.query(
          "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename",
        );
        const objects = await client.query(
          "SELECT relname, relkind FROM pg_class WHERE relnamespace = 'public'::regnamespace ORDER BY relname",
        );
        const triggers = await client.query(
          `SELECT tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
            WHERE NOT t.tgisinternal AND c.relnamespace = 'public'::regnamespace ORDER BY tgname`,
        );
        const parts = [JSON.stringify(objects.rows), JSON.stringify(triggers.rows)];
        for (const { tablename } of tables.rows) {
          const rows = await client.query(`SELECT * FROM public.${tablename} ORDER BY 1`);
          parts.push(`${tablename}: ${JSON.stringify(rows.rows)}`);
        }
        return parts.join('\n');
      }),
  };
}
