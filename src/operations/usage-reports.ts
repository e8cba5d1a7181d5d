import type { Badge } from '../chain/chain.ts';
import type { U64 } from '../internal/u64.ts';
import { refuse } from '../problems/catalog.ts';
import type { UsageResult } from '../schemas/writes.ts';
import type { ReadStore, UsageOutcome, UsageStore } from '../store/store.ts';

/**
 * A usage report (POST /stacks/{id}/usage): work the node's inference server served on one of its stacks,
 * recorded off-chain with no transaction. Refused while usage comes from a usage source (one count, never
 * two); otherwise added in one store write that checks the stack is the signer's node's and has room.
 */
export async function recordUsage(
  deps: {
    store: Pick<ReadStore, 'getStack'> & Pick<UsageStore, 'addStackUsage'>;
    /** The signer's badges; `refresh` reads them from the chain again. */
    badges: (refresh: boolean) => Promise<Badge[]>;
    usageSource: 'atoma-state' | undefined;
  },
  stackSmallId: U64,
  computeUnits: U64,
  requestHash: Uint8Array | undefined,
): Promise<UsageResult> {
  // One source of truth, never two counts: with a usage source, the stack holds what it says.
  if (deps.usageSource !== undefined) {
    throw refuse(
      'usage_from_source',
      `usage comes from ${deps.usageSource} (--usage-source ${deps.usageSource}): this daemon mirrors what atoma-node's inference service records there, so a report here would count the work twice; nothing was recorded`,
    );
  }
  // The stack is read once, in the store's write: ownership is checked there against the signer's nodes
  // (a stack of another node refreshes the badges once: the signer may have registered it since).
  const add = async (refresh: boolean): Promise<UsageOutcome> => {
    let badges: Badge[];
    try {
      badges = await deps.badges(refresh);
    } catch (error) {
      // Without the badges (the chain unreachable), an unknown stack is still answered as unknown.
      if (!refresh && (await deps.store.getStack(stackSmallId)) === undefined) return { status: 'not_found' };
      throw error;
    }
    const nodes = badges.map((b) => b.node_small_id);
    return deps.store.addStackUsage(stackSmallId, computeUnits, requestHash, Date.now(), nodes);
  };
  let outcome = await add(false);
  if (outcome.status === 'not_ours') outcome = await add(true);
  if (outcome.status === 'not_found') {
    throw refuse('stack_not_found', `no stack ${stackSmallId} is known to this daemon`, {
      parameter: 'stack_small_id',
    });
  }
  if (outcome.status === 'not_ours') {
    throw refuse(
      'stack_not_ours',
      `stack ${stackSmallId} is assigned to node ${outcome.selected_node_id}, not to this signer's node`,
      {
        parameter: 'stack_small_id',
      },
    );
  }
  if (outcome.status === 'over_capacity') {
    throw refuse(
      'over_capacity',
      `stack ${stackSmallId} has ${outcome.num_compute_units} compute units and ${outcome.already_computed_units} are used; ${computeUnits} more would exceed it (nothing was recorded)`,
      { parameter: 'compute_units' },
    );
  }
  const capacity = Number(outcome.num_compute_units);
  return {
    stack_small_id: stackSmallId,
    already_computed_units: outcome.already_computed_units,
    num_compute_units: outcome.num_compute_units,
    num_total_messages: outcome.num_total_messages,
    fill_fraction: capacity === 0 ? 1 : Number(outcome.already_computed_units) / capacity,
  };
}
