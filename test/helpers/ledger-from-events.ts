import type { EventSource } from '../../src/chain/chain.ts';

/**
 * A node's earnings recomputed from the chain's events alone, with the contract's fee formula written out
 * here (contracts.md §4.2), independently of src/protocol/fees.ts and of the store: the test's reference.
 */

interface Parsed {
  type: string;
  parsedJson: Record<string, unknown>;
}

const id = (value: unknown) => BigInt((value as { inner: string }).inner);
const u64 = (value: unknown) => BigInt(value as string);

/** calculate_stack_fee_amount: 1.2x on SamplingConsensus (level 2), floor division. */
function fee(level: number, price: bigint, units: bigint): bigint {
  return level === 2 ? (units * price * 1200n) / 1_000_000_000n : (units * price) / 1_000_000n;
}

export interface ReferenceEarnings {
  claimed: bigint;
  claimable: bigint;
  settling: bigint;
  disputed: bigint;
  unsettled: bigint;
  attester_rewards: bigint;
  refunded_to_users: bigint;
  by_epoch: Map<bigint, { claimed: bigint; stacks_claimed: number }>;
  stacks: { open: number; settling: number; claimable: number; claimed: number; disputed: number };
  /** Open stacks with usage. */
  unsettled_stacks: number;
  /** Settled stacks not claimed, ascending: their state, units, fee and first claimable epoch. */
  settled_stacks: { stack_small_id: bigint; state: string; units: bigint; fee: bigint; from: bigint }[];
  /** Stacks whose settlement asked the node to attest, ascending. */
  asked_to_attest: bigint[];
}

/** Reads every event of the source, then sums the node's earnings at `epoch`; usage is what was reported. */
export async function referenceEarnings(
  source: EventSource,
  node: bigint,
  epoch: bigint,
  usage: ReadonlyMap<bigint, bigint>,
  k = 1n,
): Promise<ReferenceEarnings> {
  const events: { event: Parsed; epoch: bigint }[] = [];
  let cursor: string | null = null;
  for (;;) {
    const page = await source.readPage(cursor);
    for (const item of page.events)
      events.push({ event: item.raw as Parsed, epoch: BigInt(item.epoch ?? -1) });
    cursor = page.nextCursor;
    if (!page.hasMore) break;
  }
  const levels = new Map<bigint, number>();
  const stacks = new Map<bigint, { node: bigint; task: bigint; units: bigint; price: bigint }>();
  const settled = new Map<bigint, { units: bigint; epoch: bigint }>();
  const attested = new Map<bigint, Set<bigint>>();
  const disputed = new Set<bigint>();
  const claimed = new Set<bigint>();
  const out: ReferenceEarnings = {
    claimed: 0n,
    claimable: 0n,
    settling: 0n,
    disputed: 0n,
    unsettled: 0n,
    attester_rewards: 0n,
    refunded_to_users: 0n,
    by_epoch: new Map(),
    stacks: { open: 0, settling: 0, claimable: 0, claimed: 0, disputed: 0 },
    unsettled_stacks: 0,
    settled_stacks: [],
    asked_to_attest: [],
  };
  const feeOf = (stack: bigint, units: bigint) => {
    const s = stacks.get(stack)!;
    return fee(levels.get(s.task)!, s.price, units);
  };
  for (const { event, epoch: at } of events) {
    const p = event.parsedJson;
    const name = event.type.split('::').at(-1);
    switch (name) {
      case 'TaskRegisteredEvent':
        levels.set(id(p.task_small_id), (p.security_level as { inner: number }).inner);
        break;
      case 'StackCreatedEvent':
        stacks.set(id(p.stack_small_id), {
          node: id(p.selected_node_id),
          task: id(p.task_small_id),
          units: u64(p.num_compute_units),
          price: u64(p.price_per_one_million_compute_units),
        });
        break;
      case 'StackTrySettleEvent':
        settled.set(id(p.stack_small_id), { units: u64(p.num_claimed_compute_units), epoch: at });
        if ((p.requested_attestation_nodes as unknown[]).map(id).includes(node))
          out.asked_to_attest.push(id(p.stack_small_id));
        break;
      case 'NewStackSettlementAttestationEvent': {
        const stack = id(p.stack_small_id);
        attested.set(stack, (attested.get(stack) ?? new Set()).add(id(p.attestation_node_id)));
        break;
      }
      case 'StackAttestationDisputeEvent':
        disputed.add(id(p.stack_small_id));
        break;
      case 'StackSettlementTicketClaimedEvent':
      case 'ClaimedStackEvent': {
        const stack = id(p.stack_small_id);
        claimed.add(stack);
        const units = u64(p.num_claimed_compute_units);
        const direct = name === 'ClaimedStackEvent';
        const s = stacks.get(stack)!;
        const paid = direct ? (units * s.price) / 1_000_000n : feeOf(stack, units);
        if (id(p.selected_node_id) === node) {
          out.claimed += paid;
          out.refunded_to_users += u64(p.user_refund_amount);
          const bucket = out.by_epoch.get(at) ?? { claimed: 0n, stacks_claimed: 0 };
          bucket.claimed += paid;
          bucket.stacks_claimed += 1;
          out.by_epoch.set(at, bucket);
        }
        if (!direct) {
          for (const attester of (p.attestation_nodes as unknown[]).map(id)) {
            if (attester === node && attested.get(stack)?.has(node)) out.attester_rewards += paid / k;
          }
        }
        break;
      }
    }
  }
  for (const [stack, s] of stacks) {
    if (s.node !== node) continue;
    if (claimed.has(stack)) {
      out.stacks.claimed += 1;
      continue;
    }
    const ticket = settled.get(stack);
    if (!ticket) {
      out.stacks.open += 1;
      out.unsettled += feeOf(stack, usage.get(stack) ?? 0n);
      if ((usage.get(stack) ?? 0n) > 0n) out.unsettled_stacks += 1;
      continue;
    }
    const state = disputed.has(stack) ? 'disputed' : epoch >= ticket.epoch + 1n ? 'claimable' : 'settling';
    out.stacks[state] += 1;
    out[state] += feeOf(stack, ticket.units);
    out.settled_stacks.push({
      stack_small_id: stack,
      state,
      units: ticket.units,
      fee: feeOf(stack, ticket.units),
      from: ticket.epoch + 1n,
    });
  }
  out.settled_stacks.sort((a, b) => (a.stack_small_id < b.stack_small_id ? -1 : 1));
  out.asked_to_attest.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return out;
}
