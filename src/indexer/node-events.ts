import { normalizeU64, type U64 } from '../internal/u64.ts';
import type { ProtocolParameters } from '../protocol/constants.ts';
import { claimableFromEpoch } from '../protocol/epochs.ts';
import type { DecodedEvent } from '../protocol/events.ts';
import { knownFee } from '../protocol/fees.ts';
import type { NewNodeEvent } from '../store/node-events.ts';
import type { IndexerTx } from '../store/store.ts';

/**
 * The node events of one page (GET /events), derived from the chain events as the page applies them and
 * recorded in the page's transaction: a stack assigned, settled, claimable, claimed; attestations asked
 * and made; disputes; subscriptions and tasks. The store adds usage and autopilot events itself.
 */

/** One applied chain event, as the page derives from it. */
export interface AppliedEvent {
  event: DecodedEvent;
  /** The transaction that emitted it. */
  digest: string;
  /** The epoch of that transaction, when the source knows it. */
  epoch: U64 | undefined;
  /** When it happened (ms), when the source says. */
  at: number | undefined;
  /** For a claim: the node fee the indexer recorded (null: unpriced), so that it is not looked up twice. */
  fee?: bigint | null;
}

/** The claims of one transaction by one node, summed into one funds_claimed event. */
interface ClaimGroup {
  node: U64;
  path: 'settlement_ticket' | 'confidential_compute';
  digest: string;
  at: number | undefined;
  stacks: U64[];
  units: bigint;
  fees: bigint;
  unpriced: number;
  refunds: bigint;
}

const uniqueInOrder = (ids: readonly U64[]): U64[] =>
  [...new Set(ids.map(String))].map((id) => normalizeU64(BigInt(id)));

export class PageEvents {
  readonly #parameters: ProtocolParameters;
  readonly #events: NewNodeEvent[] = [];
  readonly #claims = new Map<string, ClaimGroup>();
  /** Stacks settled in this page, with the epoch they become claimable (when known). */
  readonly #settled = new Map<string, { node: U64; from: U64 | undefined; units: U64; fee: U64 | null }>();
  /** Stacks claimed or disputed in this page: never claimable after it. */
  readonly #closed = new Set<string>();

  constructor(parameters: ProtocolParameters) {
    this.#parameters = parameters;
  }

  /** Derives the node events of one chain event, after the page applied it. */
  async add(tx: IndexerTx, { event, digest, epoch, at, fee: recordedFee }: AppliedEvent): Promise<void> {
    const push = (e: NewNodeEvent) => this.#events.push(at === undefined ? e : { ...e, at });
    switch (event.name) {
      case 'TaskRegisteredEvent': {
        const p = event.payload;
        push({
          type: 'task_added',
          node_small_id: null,
          data: {
            task_small_id: p.task_small_id,
            role: p.role,
            model_name: p.model_name,
            security_level: p.security_level,
            minimum_reputation_score: p.minimum_reputation_score,
          },
        });
        return;
      }
      case 'TaskDeprecationEvent': {
        const data = { task_small_id: event.payload.task_small_id, epoch: event.payload.epoch };
        push({ type: 'task_deprecated', node_small_id: null, data });
        // Everyone's news, and each subscriber's own: its node serves the task, can no longer change its
        // price or unsubscribe, and loses the subscription when the task is removed (contracts.md §3.1).
        for (const node of await tx.taskSubscribers(event.payload.task_small_id)) {
          push({ type: 'subscribed_task_deprecated', node_small_id: node, data });
        }
        return;
      }
      case 'TaskRemovedEvent':
        push({
          type: 'task_removed',
          node_small_id: null,
          data: { task_small_id: event.payload.task_small_id, epoch: event.payload.removed_at_epoch },
        });
        return;
      case 'NodeSubscribedToTaskEvent':
      case 'NodeSubscriptionUpdatedEvent': {
        const p = event.payload;
        push({
          type: 'subscription_changed',
          node_small_id: p.node_small_id,
          data: {
            task_small_id: p.task_small_id,
            change: event.name === 'NodeSubscribedToTaskEvent' ? 'subscribed' : 'price_updated',
            price_per_one_million_compute_units: p.price_per_one_million_compute_units,
            max_num_compute_units: p.max_num_compute_units,
          },
        });
        return;
      }
      case 'NodeUnsubscribedFromTaskEvent':
        push({
          type: 'subscription_changed',
          node_small_id: event.payload.node_small_id,
          data: {
            task_small_id: event.payload.task_small_id,
            change: 'unsubscribed',
            price_per_one_million_compute_units: null,
            max_num_compute_units: null,
          },
        });
        return;
      case 'StackCreatedEvent': {
        const p = event.payload;
        push({
          type: 'stack_assigned',
          node_small_id: p.selected_node_id,
          data: {
            stack_small_id: p.stack_small_id,
            task_small_id: p.task_small_id,
            num_compute_units: p.num_compute_units,
            price_per_one_million_compute_units: p.price_per_one_million_compute_units,
            owner_address: p.owner,
          },
        });
        return;
      }
      case 'StackTrySettleEvent': {
        const p = event.payload;
        const { terms } = await tx.claimContext(p.stack_small_id);
        const fee = knownFee(
          this.#parameters,
          terms?.security_level,
          terms?.price_per_one_million_compute_units,
          p.num_claimed_compute_units,
        );
        const from = epoch === undefined ? undefined : claimableFromEpoch(epoch);
        const feeAmount = fee === null ? null : normalizeU64(fee);
        this.#settled.set(String(p.stack_small_id), {
          node: p.selected_node_id,
          from,
          units: p.num_claimed_compute_units,
          fee: feeAmount,
        });
        push({
          type: 'stack_settled',
          node_small_id: p.selected_node_id,
          data: {
            stack_small_id: p.stack_small_id,
            num_claimed_compute_units: p.num_claimed_compute_units,
            node_fee_amount: feeAmount,
            settled_epoch: epoch ?? null,
            claimable_from_epoch: from ?? null,
            requested_attestation_nodes: p.requested_attestation_nodes,
            tx_digest: digest,
          },
        });
        for (const attester of uniqueInOrder(p.requested_attestation_nodes)) {
          push({
            type: 'attestation_requested',
            node_small_id: attester,
            other_node_small_id: p.selected_node_id,
            data: {
              stack_small_id: p.stack_small_id,
              selected_node_id: p.selected_node_id,
              slots: p.requested_attestation_nodes.flatMap((n, slot) =>
                String(n) === String(attester) ? [slot] : [],
              ),
              until_epoch: from ?? null,
            },
          });
        }
        return;
      }
      case 'NewStackSettlementAttestationEvent': {
        const p = event.payload;
        const { selected_node_id } = await tx.claimContext(p.stack_small_id);
        push({
          type: 'attestation_submitted',
          node_small_id: p.attestation_node_id,
          other_node_small_id: selected_node_id,
          data: {
            stack_small_id: p.stack_small_id,
            attestation_node_id: p.attestation_node_id,
            selected_node_id,
            tx_digest: digest,
          },
        });
        return;
      }
      case 'StackAttestationDisputeEvent': {
        const p = event.payload;
        this.#closed.add(String(p.stack_small_id));
        push({
          type: 'dispute_opened',
          node_small_id: p.original_node_id,
          other_node_small_id: p.attestation_node_id,
          data: {
            stack_small_id: p.stack_small_id,
            original_node_id: p.original_node_id,
            attestation_node_id: p.attestation_node_id,
            tx_digest: digest,
          },
        });
        return;
      }
      case 'StackSettlementTicketClaimedEvent':
      case 'ClaimedStackEvent': {
        const p = event.payload;
        this.#closed.add(String(p.stack_small_id));
        const direct = event.name === 'ClaimedStackEvent';
        // The fee the indexer recorded for this claim, computed once (applyPage passes it).
        if (recordedFee === undefined) throw new Error(`${event.name} came without the fee recorded for it`);
        const fee = recordedFee;
        const path = direct ? 'confidential_compute' : 'settlement_ticket';
        const key = `${digest}:${path}:${p.selected_node_id}`;
        let group = this.#claims.get(key);
        if (!group) {
          group = {
            node: p.selected_node_id,
            path,
            digest,
            at,
            stacks: [],
            units: 0n,
            fees: 0n,
            unpriced: 0,
            refunds: 0n,
          };
          this.#claims.set(key, group);
          // The claim's place in the stream: where its first stack came.
          this.#events.push({ type: 'funds_claimed', node_small_id: p.selected_node_id, data: { key } });
        }
        group.stacks.push(p.stack_small_id);
        group.units += BigInt(p.num_claimed_compute_units);
        group.refunds += BigInt(p.user_refund_amount);
        if (fee === null) group.unpriced += 1;
        else group.fees += fee;
        return;
      }
      default:
        return;
    }
  }

  /**
   * Records the page's events: each funds_claimed with its sums, and the stacks that became claimable
   * when the epoch moved from `before` to `after` (or that were settled in a past epoch), in order.
   */
  async finish(tx: IndexerTx, before: U64 | null, after: U64 | undefined): Promise<void> {
    const events = this.#events.map((e) => {
      if (e.type !== 'funds_claimed') return e;
      const group = this.#claims.get(e.data.key as string)!;
      return {
        type: e.type,
        node_small_id: group.node,
        ...(group.at === undefined ? {} : { at: group.at }),
        data: {
          tx_digest: group.digest,
          path: group.path,
          stack_small_ids: group.stacks,
          num_claimed_compute_units: normalizeU64(group.units),
          node_fee_amount: group.unpriced === group.stacks.length ? null : normalizeU64(group.fees),
          user_refund_amount: normalizeU64(group.refunds),
          unpriced_stacks: group.unpriced,
        },
      } satisfies NewNodeEvent;
    });
    const now = after ?? before;
    const claimable = new Map<string, NewNodeEvent>();
    if (now !== null) {
      if (after !== undefined && (before === null || BigInt(after) > BigInt(before))) {
        for (const t of await tx.listBecomingClaimable(before, after)) {
          const fee = knownFee(
            this.#parameters,
            t.terms?.security_level,
            t.terms?.price_per_one_million_compute_units,
            t.num_claimed_compute_units,
          );
          claimable.set(
            String(t.stack_small_id),
            claimableEvent(
              t.selected_node_id,
              t.stack_small_id,
              t.claimable_from_epoch,
              now,
              t.num_claimed_compute_units,
              fee === null ? null : normalizeU64(fee),
            ),
          );
        }
      }
      // Settled in this page in an epoch that has already passed (a source catching up on history).
      for (const [id, s] of this.#settled) {
        if (claimable.has(id) || this.#closed.has(id) || s.from === undefined) continue;
        if (BigInt(s.from) > BigInt(now)) continue;
        claimable.set(id, claimableEvent(s.node, normalizeU64(BigInt(id)), s.from, now, s.units, s.fee));
      }
    }
    for (const id of this.#closed) claimable.delete(id);
    events.push(...claimable.values());
    await tx.appendNodeEvents(events);
  }
}

function claimableEvent(
  node: U64,
  stack: U64,
  from: U64,
  epoch: U64,
  units: U64,
  fee: U64 | null,
): NewNodeEvent {
  return {
    type: 'stack_claimable',
    node_small_id: node,
    data: {
      stack_small_id: stack,
      claimable_from_epoch: from,
      epoch,
      num_claimed_compute_units: units,
      node_fee_amount: fee,
    },
  };
}
