import type { PoolClient, QueryResult } from 'pg';
import type { U64 } from '../../internal/u64.ts';
import type { NodeSubscription } from '../../schemas/model.ts';
import { attestedRow, disputedAttestationRow } from '../changes.ts';
import { StoreError } from '../errors.ts';
import { type Claim, columns } from '../params.ts';
import { idList, parseIdList } from '../rows.ts';
import {
  type AttesterReward,
  type IndexerStore,
  type IndexerTx,
  type NewStack,
  type TrySettle,
  topics,
} from '../store.ts';
import type { PostgresDatabase, Row } from './database.ts';
import { ReadAhead } from './read-ahead.ts';
import { S, type Statement } from './statements.ts';
import { dec, enc, params, rows } from './u64.ts';

/** Rows of writes the indexer keeps waiting, at most: sent then, the server works while it decodes more. */
const WAITING_ROWS = 1000;

/**
 * The indexer's writes that wait to be sent with others of their kind: each kind of a stage goes as one
 * statement (arrays through unnest), its rows in the order they came.
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
  if (stacks.length > 0) out.push([S.putStacks, columns(stacks.map(params.stack), 7)]);
  if (subscriptions.length > 0) {
    out.push([S.putSubscriptions, columns(subscriptions.map(params.subscription), 4)]);
  }
  if (tickets.length > 0) {
    const ticketRows = tickets.map(({ ticket, epoch }) => params.ticket(ticket, epoch));
    const requests = tickets.flatMap(({ ticket }) => params.requests(ticket));
    out.push([S.putTickets, [...columns(ticketRows, 8), ...columns(requests, 3)]]);
  }
  if (claims.length > 0) out.push([S.claimTickets, columns(claims.map(params.claim), 8)]);
  if (rewards.length > 0) out.push([S.putRewards, columns(rewards.map(params.reward), 5)]);
  return out;
}

/**
 * The statements of one transaction, on its connection, which pipelines: a write whose outcome the caller
 * does not need is sent and not awaited, so a page of events costs a few round trips instead of one per
 * event. The server runs the statements in order; the first failure is thrown by the next call that waits
 * for an answer, or by flush() before COMMIT. Writes of many rows wait in stages (see wait) and go as one
 * statement per kind.
 */
class Pipeline {
  open = true;
  readonly #db: PostgresDatabase;
  readonly #client: PoolClient;
  #failure: unknown;
  #last: Promise<unknown> = Promise.resolve();
  #stages: Stage[] = [];
  /** The stage of the last waiting write of each key. */
  readonly #stageOf = new Map<string, number>();
  #waiting = 0;

  constructor(db: PostgresDatabase, client: PoolClient) {
    this.#db = db;
    this.#client = client;
  }

  /** Refuses a statement once the transaction has ended, or once one of its statements failed. */
  usable(): void {
    if (!this.open) {
      throw new StoreError('store_transaction_ended', 'the indexer transaction has already ended', false);
    }
    if (this.#failure !== undefined) throw this.#failure;
  }

  /**
   * Keeps rows of writes waiting, in stages. Of the writes that wait, only putStack, putTicket and the
   * claims touch a stack's rows (its stack, ticket and attestation requests), only putSubscription a
   * subscription's, only putAttesterRewards a reward's, and none reads what another writes (putStack reads
   * its task, but putTask does not wait). So a write may go before earlier ones with other keys (they
   * commute), never before one with its own: it joins the stage after the last that holds its key. Each
   * kind of a stage goes as one statement, stage after stage, before any statement that does not wait.
   */
  wait<K extends keyof Stage>(kind: K, keys: readonly string[], rows: readonly Stage[K][number][]): void {
    this.usable();
    let at = 0;
    for (const key of keys) at = Math.max(at, (this.#stageOf.get(key) ?? -1) + 1);
    for (const key of keys) this.#stageOf.set(key, at);
    const stage = this.#stages[at] ?? newStage();
    this.#stages[at] = stage;
    (stage[kind] as unknown[]).push(...rows);
    this.#waiting += rows.length;
    if (this.#waiting >= WAITING_ROWS) this.#sendWaiting();
  }

  #sendWaiting(): void {
    if (this.#waiting === 0) return;
    const sending = this.#stages;
    this.#stages = [];
    this.#stageOf.clear();
    this.#waiting = 0;
    for (const stage of sending) {
      for (const [statement, values] of stageStatements(stage)) void this.#sendNow(statement, values);
    }
  }

  #sendNow(statement: Statement, values: unknown[]): Promise<QueryResult<Row>> {
    const sent = this.#db.exec(this.#client, statement, values);
    this.#last = sent.catch((error: unknown) => {
      this.#failure ??= error;
    });
    return sent;
  }

  /** Sends a statement (after the writes waiting: statements run in the order of the calls). */
  send(statement: Statement, values: unknown[]): Promise<QueryResult<Row>> {
    this.usable();
    this.#sendWaiting();
    return this.#sendNow(statement, values);
  }

  /** Sends a statement whose outcome is not needed. */
  async write(statement: Statement, values: unknown[]): Promise<void> {
    void this.send(statement, values);
  }

  /** Sends a statement and waits for its answer (and so for every statement sent before it). */
  async run(statement: Statement, values: unknown[]): Promise<QueryResult<Row>> {
    const sent = this.send(statement, values);
    await this.#last;
    if (this.#failure !== undefined) throw this.#failure;
    return sent;
  }

  /** Sends what waits and waits for every answer; throws the first failure. */
  async flush(): Promise<void> {
    if (this.#failure === undefined) this.#sendWaiting();
    await this.#last;
    if (this.#failure !== undefined) throw this.#failure;
  }
}

/**
 * The IndexerTx of one transaction, bound to its connection and unusable once it ends. The topics it
 * touched are bumped with COMMIT, in its round trip (flush hands the bump to `defer`).
 */
function indexerTx(db: PostgresDatabase, client: PoolClient, defer: (sent: Promise<unknown>) => void) {
  const pipe = new Pipeline(db, client);
  let appended = false;
  /** Topics of cached reads this transaction changed (flushed before COMMIT). */
  const touched = new Set<string>();
  /** The claim contexts of the page's stacks, when read ahead. */
  const ahead = new ReadAhead();
  /** Whether each stack the page creates existed: read ahead, or asked, then kept as it creates them. */
  const present = new Map<string, boolean>();
  const { run, write, send } = {
    run: pipe.run.bind(pipe),
    write: pipe.write.bind(pipe),
    send: pipe.send.bind(pipe),
  };
  const claim = (c: Claim) => {
    pipe.wait('claims', [`stack:${enc(c.claim.stack_small_id)}`], [c]);
    touched.add(topics.tickets(c.claim.selected_node_id)).add(topics.stacks(c.claim.selected_node_id));
  };

  const api: IndexerTx = {
    claimEvents: async (keys) => {
      const unique = [...new Set(keys)];
      const fresh = new Set<string>();
      if (unique.length === 0) return fresh;
      for (const row of (await run(S.claimEvents, [unique])).rows) fresh.add(row.event_key as string);
      return fresh;
    },
    putTask: async (t) => {
      pipe.usable();
      ahead.putTask(t);
      touched.add(topics.tasks);
      await write(S.putTask, params.task(t));
    },
    deprecateTask: async (id, epoch) => {
      touched.add(topics.tasks);
      return ((await run(S.deprecateTask, [enc(epoch), enc(id)])).rowCount ?? 0) > 0;
    },
    taskSubscribers: async (id) =>
      (await run(S.subscribersOf, [enc(id)])).rows.map((row) => dec(row.node_small_id)),
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
      pipe.wait('subscriptions', [`subscription:${enc(s.node_small_id)}:${enc(s.task_small_id)}`], [s]);
      touched.add(topics.subscriptions(s.node_small_id));
    },
    deleteSubscription: async (node, task) => {
      touched.add(topics.subscriptions(node));
      return ((await run(S.deleteSubscription, [enc(node), enc(task)])).rowCount ?? 0) > 0;
    },
    putStack: async (s) => {
      await api.createStack(s);
    },
    createStack: async (s) => {
      pipe.usable();
      const id = enc(s.stack_small_id);
      const existed = present.get(id) ?? (await run(S.stacksPresent, [[id]])).rows.length > 0;
      present.set(id, true);
      if (existed) return false;
      pipe.wait('stacks', [`stack:${id}`], [s]);
      ahead.putStack(s);
      touched.add(topics.stacks(s.selected_node_id));
      return true;
    },
    putTicket: async (t, epoch) => {
      pipe.wait('tickets', [`stack:${enc(t.stack_small_id)}`], [{ ticket: t, epoch }]);
      touched.add(topics.stacks(t.selected_node_id)).add(topics.tickets(t.selected_node_id));
    },
    recordAttestation: async (a) => {
      // The ticket row stays locked until commit: another daemon's attestation for it waits, then reads
      // this one's slots.
      const [row] = (await run(S.lockTicket, [enc(a.stack_small_id)])).rows;
      if (!row) return 'no_ticket';
      touched.add(topics.tickets(dec(row.selected_node_id)));
      const attested = attestedRow(row, a);
      if (attested === 'not_requested') return attested;
      ahead.setAttested(a.stack_small_id, attested.attested);
      await write(S.attest, [attested.leaves, attested.attested, enc(a.stack_small_id)]);
      await write(S.requestAttested, [enc(a.stack_small_id), enc(a.attestation_node_id)]);
      return 'applied';
    },
    settleTicket: async (t) => {
      touched.add(topics.tickets(t.selected_node_id));
      await write(S.settleTicket, params.settledTicket(t));
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
      pipe.usable();
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
    claimTicket: async (c, record) => {
      claim({ claim: c, attesters: idList(c.attestation_nodes), path: 'settlement_ticket', record });
    },
    putDispute: async (d, epoch) => {
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
      await write(S.putDispute, params.dispute(d));
    },
    claimStack: async (c, record) => {
      claim({ claim: c, attesters: '[]', path: 'confidential_compute', record });
    },
    putAttesterRewards: async (rewards) => {
      if (rewards.length === 0) return;
      pipe.wait(
        'rewards',
        rewards.map((r) => `reward:${enc(r.stack_small_id)}:${r.slot}`),
        rewards,
      );
      for (const r of rewards) touched.add(topics.rewards(r.node_small_id));
    },
    saveChainState: async (state) => {
      // Pages repeat the epoch: the chain's topic moves only when the epoch or the parameters do.
      const values = params.chainState(state);
      await write(S.bumpChainTopic, values.slice(0, 2));
      await write(S.saveChainState, values);
    },
    appendNodeEvents: async (events) => {
      if (events.length === 0) return;
      for (const [statement, values] of db.nodeEventStatements(events)) await write(statement, values);
      appended = true;
    },
    listBecomingClaimable: async (after, upTo) =>
      (await run(S.becomingClaimable, [after === null ? '-1' : enc(after), enc(upTo)])).rows.map(
        rows.claimableOf,
      ),
    saveCursor: async (source, cursor, counts) => {
      await write(S.saveCursor, params.cursor(source, cursor, counts));
    },
  };
  return {
    api,
    /** Sends everything, then the topics' bump with COMMIT; true when it bumped them. */
    flush: async (): Promise<boolean> => {
      await pipe.flush();
      if (touched.size === 0) return false;
      // Goes with COMMIT, in its round trip: the topics' rows and the store's version row, which every
      // writer of every daemon on the database bumps, are locked only for the commit itself.
      defer(db.exec(client, S.bumpTopicsAndVersion, [[...touched]]));
      touched.clear();
      return true;
    },
    finish: () => {
      pipe.open = false;
    },
    appended: () => appended,
  };
}

/** The indexer's side of the PostgreSQL store. */
export function postgresIndexer(db: PostgresDatabase): IndexerStore {
  return {
    indexerTransaction: (fn) =>
      db.op(() =>
        db.queued(async () => {
          let appended = false;
          const result = await db.transaction(
            async (client, defer, bumped) => {
              const tx = indexerTx(db, client, defer);
              try {
                const result = await fn(tx.api);
                if (await tx.flush()) bumped();
                appended = tx.appended();
                return result;
              } finally {
                tx.finish();
              }
            },
            () => true,
          );
          if (appended) db.nodeEvents.emit();
          return result;
        }),
      ),
    getCursor: async (source) => {
      const [row] = await db.rows(S.getCursor, [source]);
      return row ? rows.cursor(row) : undefined;
    },
    hasEvents: async (events) => {
      const keys = [...new Set(events.map((e) => e.key))];
      if (keys.length === 0) return db.op(async () => true);
      // A stack's creation is recorded by its row (IndexerTx.createStack); before migration 0010, by its key.
      const stacks = [
        ...new Set(events.flatMap((e) => (e.createdStack === undefined ? [] : [enc(e.createdStack)]))),
      ];
      const [claimed, present] = await Promise.all([
        db.rows(S.eventsClaimed, [keys]),
        stacks.length === 0 ? [] : db.rows(S.stacksPresent, [stacks]),
      ]);
      const claimedKeys = new Set(claimed.map((r) => r.event_key as string));
      const presentStacks = new Set(present.map((r) => enc(dec(r.stack_small_id))));
      return events.every(
        (e) =>
          claimedKeys.has(e.key) || (e.createdStack !== undefined && presentStacks.has(enc(e.createdStack))),
      );
    },
  };
}
