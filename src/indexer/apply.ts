import type { Logger } from 'pino';
import type { EventPage, RawEvent } from '../chain/chain.ts';
import { normalizeU64, type U64 } from '../internal/u64.ts';
import { U64ArithmeticError } from '../protocol/arithmetic.ts';
import { DEFAULT_PARAMETERS, type ProtocolParameters, SecurityLevel } from '../protocol/constants.ts';
import {
  createdStackOf,
  type DecodedEvent,
  decodeEvent,
  type EventEnvelope,
  keyTransaction,
} from '../protocol/events.ts';
import { attesterReward, knownFee } from '../protocol/fees.ts';
import { StoreError } from '../store/errors.ts';
import type {
  AttesterReward,
  IndexerCounts,
  IndexerStore,
  IndexerTx,
  ReadStore,
  TicketClaimed,
} from '../store/store.ts';
import { PageEvents } from './node-events.ts';

interface Decoded {
  envelope: EventEnvelope;
  event: DecodedEvent;
  /** The epoch of the event's transaction, when the source knows it. */
  epoch: U64 | undefined;
  /** When it happened (the fullnode's timestampMs), when the source says. */
  at: number | undefined;
}

/** What applying an event needs besides the event: the chain's fee parameters. */
interface ApplyContext {
  parameters: ProtocolParameters;
}

export function emptyCounts(): IndexerCounts {
  return { applied: 0, duplicate: 0, ignored: 0, unknown: 0, malformed: 0, orphaned: 0 };
}

export function addCounts(into: IndexerCounts, more: IndexerCounts): IndexerCounts {
  into.applied += more.applied;
  into.duplicate += more.duplicate;
  into.ignored += more.ignored;
  into.unknown += more.unknown;
  into.malformed += more.malformed;
  into.orphaned += more.orphaned;
  return into;
}

/**
 * Applies one page: decodes every event first (nothing an event contains can throw past this point), then
 * applies the decodable ones and saves the cursor in one transaction. A duplicate is skipped; an unknown
 * or malformed event is counted and logged with its position; an event about something never seen
 * (an orphan) is counted. Returns what happened to the page's events.
 *
 * A transaction that another writer's creation of one of its stacks failed (store_created_meanwhile:
 * PostgreSQL, another daemon indexing another source into the same database) rolled back whole: it is
 * applied again, up to CONFLICT_ATTEMPTS times, and then finds that creation a duplicate.
 */
export async function applyPage(
  store: Pick<IndexerStore, 'indexerTransaction'> & Pick<ReadStore, 'getChainState'>,
  sourceId: string,
  page: EventPage,
  log: Logger,
): Promise<IndexerCounts> {
  const skipped = emptyCounts();
  const decoded: Decoded[] = [];
  for (const item of page.events) {
    const result = decodeOne(item, log);
    if (result === 'malformed') skipped.malformed += 1;
    else if (result === 'ignored') skipped.ignored += 1;
    else if (result === 'unknown') skipped.unknown += 1;
    else decoded.push(result);
  }
  for (let attempt = 1; ; attempt++) {
    try {
      return await applyDecoded(store, sourceId, page, decoded, { ...skipped });
    } catch (error) {
      if (
        attempt >= CONFLICT_ATTEMPTS ||
        !(error instanceof StoreError) ||
        error.code !== CREATED_MEANWHILE
      ) {
        throw error;
      }
      log.info(
        { err: error, attempt },
        'another writer created a stack of this page meanwhile; applying it again',
      );
    }
  }
}

/** How many times applyPage tries a page whose stacks another writer kept creating meanwhile. */
const CONFLICT_ATTEMPTS = 5;
const CREATED_MEANWHILE = 'store_created_meanwhile';

/** The page's decoded events in one transaction, with its cursor; `counts` holds what decoding skipped. */
async function applyDecoded(
  store: Pick<IndexerStore, 'indexerTransaction'> & Pick<ReadStore, 'getChainState'>,
  sourceId: string,
  page: EventPage,
  decoded: readonly Decoded[],
  counts: IndexerCounts,
): Promise<IndexerCounts> {
  // Fees are computed with the parameters the source reports, else the last known, else the contract's.
  const state = await store.getChainState();
  const context: ApplyContext = {
    parameters: page.parameters ?? state.parameters ?? DEFAULT_PARAMETERS,
  };
  await store.indexerTransaction(async (tx) => {
    const derived = new PageEvents(context.parameters);
    // A stack's creation is recorded by the stack's row (IndexerTx.createStack), not by its key.
    const keys = tx.claimEvents(decoded.filter((d) => !createsStack(d)).map((d) => d.envelope.key));
    if (tx.readAhead) {
      // Together: on PostgreSQL both go in one round trip, and no claim context costs one of its own after.
      const asked = contextsAsked(decoded);
      const created = decoded.flatMap((d) => createdStackOf(d.event) ?? []);
      await Promise.all([keys, tx.readAhead(asked.stacks, asked.tasks, created)]);
    }
    const fresh = await keys;
    for (const item of decoded) {
      // A key appears in `fresh` once even if the page repeats it; delete it so the repeat is a duplicate.
      if (!createsStack(item) && !fresh.delete(item.envelope.key)) {
        counts.duplicate += 1;
        continue;
      }
      const applied = await applyEvent(tx, item, context);
      if (applied === 'duplicate') {
        counts.duplicate += 1;
        continue;
      }
      if (applied !== false) counts.applied += 1;
      else counts.orphaned += 1;
      await derived.add(tx, {
        event: item.event,
        digest: keyTransaction(item.envelope.key),
        epoch: item.epoch,
        at: item.at,
        ...(typeof applied === 'object' ? { fee: applied.fee } : {}),
      });
    }
    if (page.epoch !== undefined || page.parameters !== undefined) {
      await tx.saveChainState({ epoch: page.epoch, parameters: page.parameters });
    }
    await derived.finish(tx, state.epoch, page.epoch);
    await tx.saveCursor(sourceId, page.nextCursor, counts);
  });
  return counts;
}

/** Whether the event creates a stack: recorded by the stack's row, not by a claimed key. */
function createsStack(item: Decoded): boolean {
  return createdStackOf(item.event) !== undefined;
}

/**
 * The stacks whose claimContext the page will ask (a claim prices its fee, a try-settle its node event, an
 * attestation names the stack's node: see applyEvent and PageEvents), and the tasks of the stacks the page
 * creates among them, for IndexerTx.readAhead.
 */
function contextsAsked(decoded: readonly Decoded[]): { stacks: U64[]; tasks: U64[] } {
  const stacks = new Map<string, U64>();
  for (const { event } of decoded) {
    if (
      event.name === 'StackTrySettleEvent' ||
      event.name === 'NewStackSettlementAttestationEvent' ||
      event.name === 'StackSettlementTicketClaimedEvent' ||
      event.name === 'ClaimedStackEvent'
    ) {
      stacks.set(String(event.payload.stack_small_id), event.payload.stack_small_id);
    }
  }
  const tasks = new Map<string, U64>();
  for (const { event } of decoded) {
    if (event.name !== 'StackCreatedEvent' || !stacks.has(String(event.payload.stack_small_id))) continue;
    tasks.set(String(event.payload.task_small_id), event.payload.task_small_id);
  }
  return { stacks: [...stacks.values()], tasks: [...tasks.values()] };
}

const warnedUnknown = new Set<string>();

/** An event as its source gave it: decoded here unless the source did (decodeEvent), and logged if skipped. */
function decodeOne(item: RawEvent, log: Logger): Decoded | 'malformed' | 'ignored' | 'unknown' {
  if (item.parseError !== undefined) {
    log.warn({ position: item.position, reason: item.parseError }, 'malformed event skipped');
    return 'malformed';
  }
  const outcome = item.decoded ?? decodeEvent(item.raw);
  switch (outcome.kind) {
    case 'event':
      return { envelope: outcome.envelope, event: outcome.event, epoch: item.epoch, at: outcome.at };
    case 'ignored':
      return 'ignored';
    case 'unknown':
      if (!warnedUnknown.has(outcome.eventKind)) {
        warnedUnknown.add(outcome.eventKind);
        log.warn(
          { position: item.position, event: outcome.eventKind },
          'unknown event kind skipped (logged once per kind)',
        );
      }
      return 'unknown';
    case 'malformed':
      log.warn({ position: item.position, reason: outcome.reason }, 'malformed event skipped');
      return 'malformed';
  }
}

/**
 * Applies one decoded event; false when it refers to something the store has never seen (an orphan), and
 * 'duplicate' when the stack it creates existed (createsStack). A claim answers the node fee it
 * recorded, for the node event that reports it.
 */
async function applyEvent(
  tx: IndexerTx,
  { envelope, event, epoch }: Decoded,
  context: ApplyContext,
): Promise<boolean | 'duplicate' | { fee: bigint | null }> {
  const { name, payload: p } = event;
  switch (name) {
    case 'TaskRegisteredEvent':
      await tx.putTask(p);
      return true;
    case 'TaskDeprecationEvent':
      return tx.deprecateTask(p.task_small_id, p.epoch);
    case 'TaskRemovedEvent':
      return tx.removeTask(p.task_small_id, p.removed_at_epoch);
    case 'NodeRegisteredEvent':
      await tx.putNode(p.node_small_id, p.badge_id, envelope.sender ?? '');
      return true;
    case 'NodeSubscribedToModelEvent':
      await tx.putNodeModel(p.node_small_id, p.model_name, p.echelon_id);
      return true;
    case 'NodeSubscribedToTaskEvent':
    case 'NodeSubscriptionUpdatedEvent':
      // An update seen before its subscription (or its task) still leaves the right row behind.
      await tx.putSubscription(p);
      return true;
    case 'NodeUnsubscribedFromTaskEvent':
      return tx.deleteSubscription(p.node_small_id, p.task_small_id);
    case 'StackCreatedEvent':
      return (await tx.createStack({ ...p, owner_address: p.owner })) || 'duplicate';
    case 'StackTrySettleEvent':
      await tx.putTicket(p, epoch);
      return true;
    case 'NewStackSettlementAttestationEvent':
      return (await tx.recordAttestation(p)) === 'applied';
    case 'StackSettlementTicketEvent':
      await tx.settleTicket(p);
      return true;
    case 'StackSettlementTicketClaimedEvent': {
      const { terms, already_attested } = await tx.claimContext(p.stack_small_id);
      const fee = knownFee(
        context.parameters,
        terms?.security_level,
        terms?.price_per_one_million_compute_units,
        p.num_claimed_compute_units,
      );
      await tx.claimTicket(p, { epoch, node_fee_amount: fee === null ? null : normalizeU64(fee) });
      if (fee !== null) {
        await tx.putAttesterRewards(attesterRewards(p, already_attested, fee, epoch, context.parameters));
      }
      return { fee };
    }
    case 'StackAttestationDisputeEvent':
      // It may also be the last attestation, whose failed check the chain reports only as this dispute.
      await tx.putDispute(p, epoch);
      return true;
    case 'ClaimedStackEvent': {
      // claim_funds_for_stacks pays floor(units x price / 1e6): it accepts ConfidentialCompute stacks only.
      const { terms } = await tx.claimContext(p.stack_small_id);
      const fee = knownFee(
        context.parameters,
        SecurityLevel.ConfidentialCompute,
        terms?.price_per_one_million_compute_units,
        p.num_claimed_compute_units,
      );
      await tx.claimStack(p, { epoch, node_fee_amount: fee === null ? null : normalizeU64(fee) });
      return { fee };
    }
  }
}

/**
 * What a claim credited its requested attesters (contracts.md §2.9): fee / k to each listed slot whose
 * node attested (a node listed twice is credited twice); nothing to the others.
 */
function attesterRewards(
  claim: TicketClaimed,
  alreadyAttested: readonly U64[],
  fee: bigint,
  epoch: U64 | undefined,
  parameters: ProtocolParameters,
): AttesterReward[] {
  const rewards: AttesterReward[] = [];
  claim.attestation_nodes.forEach((node, slot) => {
    if (!alreadyAttested.includes(node)) return;
    let amount: bigint;
    try {
      amount = attesterReward(parameters, fee);
    } catch (error) {
      // k = 0 now: the chain's division would have aborted this claim; the parameter changed since.
      if (error instanceof U64ArithmeticError) return;
      throw error;
    }
    rewards.push({
      stack_small_id: claim.stack_small_id,
      slot,
      node_small_id: node,
      amount: normalizeU64(amount),
      epoch: epoch ?? null,
    });
  });
  return rewards;
}
