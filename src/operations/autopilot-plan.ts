import type { Logger } from 'pino';
import {
  type Badge,
  type Chain,
  type MoveAbort,
  type Operation,
  type Simulation,
  wasLogged,
} from '../chain/chain.ts';
import { normalizeU64, type U64 } from '../internal/u64.ts';
import { describeAbort } from '../protocol/aborts.ts';
import { DEFAULT_PARAMETERS, type ProtocolParameters, SecurityLevel } from '../protocol/constants.ts';
import { knownFee } from '../protocol/fees.ts';
import { EMPTY_HASH } from '../protocol/proofs.ts';
import type { PlanItem } from '../schemas/autopilot.ts';
import type { AutopilotStore, ReadStore } from '../store/store.ts';
import type { Writes } from './writes.ts';

/**
 * The autopilot's planning (autopilot.ts acts on the plan): from the indexed state, what each of the signer's
 * nodes should do now and why, each action simulated against the chain first. Settlements of the stacks
 * filled to --autopilot-settle-fill or idle for --autopilot-settle-idle (confidential ones claimed
 * directly, or left to atoma-node when it claims them itself), attestations the node was asked for, and
 * claims in batches worth --autopilot-min-claim. Each question is one index range of the store.
 */

/** The autopilot's mode and policy (docs/EARNINGS.md explains how to choose them). */
export interface AutopilotSettings {
  /** off: nothing; dry-run: plans and records what it would do; on: acts. */
  readonly mode: 'off' | 'dry-run' | 'on';
  /** Settle a stack once its reported usage reaches this fraction of its units (0 < f <= 1). */
  readonly settleFill: number;
  /** Or once it has had usage but none for this many seconds. */
  readonly settleIdleSeconds: number;
  /** Claim only batches whose node fees reach this (smallest USDC unit). */
  readonly minClaim: bigint;
  /** Act only when a transaction's estimated gas stays at or under this (MIST). */
  readonly maxGas: bigint;
  /** In any 24 hours, sign transactions whose gas adds up to at most this (MIST). */
  readonly maxGasPerDay: bigint;
}

/** Most stacks one claim transaction carries (a pure vector argument stays far under Sui's limits). */
export const MAX_BATCH = 500;
/**
 * atoma-node claims a confidential stack itself once it passes CONFIDENTIAL_CLAIM_FILL with no request
 * running (upstream-daemon.md §3.5), and marks it locked for claim in atoma-state. With a usage source the
 * autopilot leaves those stacks to the node (docs/ATOMA-NODE.md): this is what it asks the source.
 */
export interface NodeClaims {
  /** The node locked the stack to claim it itself, as the source last said. */
  lockedByNode(stack: U64): boolean;
  /** Reads the stack from the source now (and mirrors it): undefined when the source does not have it. */
  refresh(stack: U64): Promise<{ already_computed_units: U64; is_locked_for_claim: boolean } | undefined>;
}

/** The fill at which atoma-node claims a confidential stack by itself (RATIO_FOR_CLAIM_STACK_THRESHOLD). */
export const CONFIDENTIAL_CLAIM_FILL = 0.95;

export interface Planned extends PlanItem {
  operation?: Operation;
  badge?: Badge;
  /** An attestation that can never be made (the stack in dispute, the window closed): retired after its pass. */
  dead?: true;
}

export interface PlannerDeps {
  settings: AutopilotSettings;
  chain: Chain;
  store: AutopilotStore & ReadStore;
  /** The signer's badges (cached by the writes). */
  writes: Pick<Writes, 'badges'>;
  log: Logger;
  nodeClaims?: NodeClaims | undefined;
}

export class AutopilotPlanner {
  readonly #settings: AutopilotSettings;
  readonly #chain: Chain;
  readonly #store: AutopilotStore & ReadStore;
  readonly #writes: Pick<Writes, 'badges'>;
  readonly #log: Logger;
  readonly #nodeClaims: NodeClaims | undefined;

  constructor(deps: PlannerDeps) {
    this.#settings = deps.settings;
    this.#chain = deps.chain;
    this.#store = deps.store;
    this.#writes = deps.writes;
    this.#log = deps.log;
    this.#nodeClaims = deps.nodeClaims;
  }

  /** What the node should do now, each item acted on or skipped with its reason; `blocked` stacks wait. */
  async plan(now: number, blocked: Set<U64>): Promise<Planned[]> {
    const { epoch, parameters } = await this.#store.getChainState();
    const params = parameters ?? DEFAULT_PARAMETERS;
    const plan: Planned[] = [];
    for (const badge of await this.#writes.badges()) {
      plan.push(...(await this.#planSettlements(badge, now, blocked, params)));
      plan.push(...(await this.#planAttestations(badge, epoch, blocked)));
      if (epoch !== null) plan.push(...(await this.#planClaims(badge, epoch, blocked, params)));
    }
    return plan;
  }

  async #planSettlements(
    badge: Badge,
    now: number,
    blocked: Set<U64>,
    params: ProtocolParameters,
  ): Promise<Planned[]> {
    const { settleFill, settleIdleSeconds } = this.#settings;
    const idleBefore = now - settleIdleSeconds * 1000;
    const candidates = await this.#store.listSettleCandidates(
      badge.node_small_id,
      Math.floor(settleFill * 1_000_000),
      idleBefore,
    );
    const settle: Planned[] = [];
    const direct: { id: U64; fee: bigint | null; units: U64; reason: string }[] = [];
    for (const stack of candidates) {
      const id = stack.stack_small_id;
      const used = stack.already_computed_units;
      if (blocked.has(id) || used === 0) continue;
      const fill = Number(used) / Number(stack.terms.num_compute_units);
      const idle = stack.last_usage_at !== null && stack.last_usage_at < idleBefore;
      if (fill < settleFill && !idle) continue;
      const reason =
        fill >= settleFill
          ? `filled to ${percent(fill)} (settles at ${percent(settleFill)})`
          : `no usage for ${Math.round((now - stack.last_usage_at!) / 1000)} s (settles after ${settleIdleSeconds} s)`;
      const level = stack.terms.security_level;
      const fee = knownFee(params, level, stack.terms.price_per_one_million_compute_units, used);
      if (level === SecurityLevel.ConfidentialCompute) {
        const leftToNode = await this.#leftToNode(id, fill);
        if (leftToNode !== undefined) {
          settle.push({
            action: 'direct_claim',
            node_small_id: badge.node_small_id,
            stack_small_ids: [id],
            will: 'skip',
            reason: leftToNode,
            node_fee_amount: fee === null ? null : normalizeU64(fee),
            gas_estimate: null,
          });
          continue;
        }
        direct.push({ id, fee, units: used, reason });
        continue;
      }
      const operation: Operation = {
        kind: 'try_settle_stack',
        badge,
        stack_small_id: id,
        num_claimed_compute_units: used,
        committed_stack_proof: EMPTY_HASH,
        stack_merkle_leaf: EMPTY_HASH,
      };
      settle.push(
        await this.#gated({
          action: 'settle',
          node_small_id: badge.node_small_id,
          stack_small_ids: [id],
          will: 'act',
          reason: `${reason}; claims its ${used} recorded units`,
          node_fee_amount: fee === null ? null : normalizeU64(fee),
          gas_estimate: null,
          operation,
          badge,
        }),
      );
    }
    const batches = await this.#batches(badge, 'direct_claim', direct, (ids) => ({
      kind: 'claim_funds_for_stacks',
      badge,
      stack_small_ids: ids,
      num_compute_units_per_stack_to_claim: ids.map((id) => direct.find((d) => d.id === id)!.units),
    }));
    return [...settle, ...batches];
  }

  /**
   * Why a confidential stack is left to atoma-node, which claims it itself (NodeClaims), or undefined when
   * the autopilot may claim it: without a usage source, always. With one, a stack the node locked, or filled
   * to its claim threshold, is the node's; an idle one below it is read from the source once more first, so
   * a request that came meanwhile (and may take it past the threshold) leaves it to the node too.
   */
  async #leftToNode(id: U64, fill: number): Promise<string | undefined> {
    const claims = this.#nodeClaims;
    if (claims === undefined) return undefined;
    const theNode = 'atoma-node claims a confidential stack itself; the autopilot leaves it to the node';
    if (claims.lockedByNode(id)) return `${theNode} (locked for claim in atoma-state)`;
    if (fill >= CONFIDENTIAL_CLAIM_FILL) {
      return `${theNode} (filled to ${percent(fill)}: the node claims at ${percent(CONFIDENTIAL_CLAIM_FILL)})`;
    }
    const now = await claims.refresh(id);
    if (now === undefined) return undefined;
    if (now.is_locked_for_claim) return `${theNode} (locked for claim in atoma-state)`;
    return undefined;
  }

  async #planAttestations(badge: Badge, epoch: U64 | null, blocked: Set<U64>): Promise<Planned[]> {
    const requests = await this.#store.listAttestationRequests(badge.node_small_id);
    const plan: Planned[] = [];
    const seen = new Set<U64>();
    for (const request of requests) {
      const id = request.stack_small_id;
      if (seen.has(id) || blocked.has(id)) continue;
      seen.add(id);
      const item: Planned = {
        action: 'attest',
        node_small_id: badge.node_small_id,
        stack_small_ids: [id],
        will: 'skip',
        reason: '',
        node_fee_amount: null,
        gas_estimate: null,
        badge,
      };
      if (request.is_in_dispute) {
        plan.push({ ...item, dead: true, reason: 'the stack is in dispute: an attestation would abort' });
      } else if (epoch !== null && request.until_epoch !== null && epoch > request.until_epoch) {
        plan.push({
          ...item,
          dead: true,
          reason: `the attestation window closed with epoch ${request.until_epoch}: an attestation would abort`,
        });
      } else if (!request.has_record) {
        plan.push({
          ...item,
          reason:
            "no record of the stack's requests: the node's inference server has not re-run them, so an attestation could only open a false dispute",
        });
      } else {
        plan.push(
          await this.#gated({
            ...item,
            will: 'act',
            reason: `asked to attest (slot ${request.slot + 1})${request.until_epoch === null ? '' : `, until epoch ${request.until_epoch}`}`,
            operation: {
              kind: 'submit_stack_settlement_attestation',
              badge,
              stack_small_id: id,
              committed_stack_proof: EMPTY_HASH,
              stack_merkle_leaf: EMPTY_HASH,
            },
          }),
        );
      }
    }
    return plan;
  }

  async #planClaims(
    badge: Badge,
    epoch: U64,
    blocked: Set<U64>,
    params: ProtocolParameters,
  ): Promise<Planned[]> {
    const tickets = await this.#store.listClaimable(badge.node_small_id, epoch);
    const plan: Planned[] = [];
    const priced: { id: U64; fee: bigint | null; units: U64; reason: string }[] = [];
    for (const ticket of tickets) {
      const id = ticket.stack_small_id;
      if (blocked.has(id)) continue;
      const fee = knownFee(
        params,
        ticket.terms?.security_level,
        ticket.terms?.price_per_one_million_compute_units,
        ticket.num_claimed_compute_units,
      );
      if (fee === null) {
        plan.push({
          action: 'claim',
          node_small_id: badge.node_small_id,
          stack_small_ids: [id],
          will: 'skip',
          reason:
            'its price or task was never seen (first seen mid-history): the autopilot cannot judge it; claim it by hand',
          node_fee_amount: null,
          gas_estimate: null,
        });
        continue;
      }
      priced.push({
        id,
        fee,
        units: ticket.num_claimed_compute_units,
        reason: `claimable since epoch ${ticket.claimable_from_epoch}`,
      });
    }
    plan.push(
      ...(await this.#batches(badge, 'claim', priced, (ids) => ({
        kind: 'claim_funds',
        badge,
        settled_ticket_ids: ids,
      }))),
    );
    return plan;
  }

  /**
   * Claims in as few transactions as the contract allows: the largest fees first, up to MAX_BATCH per
   * transaction. A batch is simulated first: when its gas is above --autopilot-max-gas, or it would abort
   * (the pooled treasury cannot pay it all), its larger-fee half is tried, as long as the half still
   * reaches --autopilot-min-claim. A batch is worth it when its node fees reach --autopilot-min-claim.
   * What is left waits.
   */
  async #batches(
    badge: Badge,
    action: 'claim' | 'direct_claim',
    items: { id: U64; fee: bigint | null; reason: string }[],
    operation: (ids: U64[]) => Operation,
  ): Promise<Planned[]> {
    const { minClaim, maxGas } = this.#settings;
    const plan: Planned[] = [];
    const queue = [...items].sort((a, b) => (b.fee! > a.fee! ? 1 : b.fee! < a.fee! ? -1 : 0));
    const feesOf = (size: number) => queue.slice(0, size).reduce((sum, i) => sum + (i.fee ?? 0n), 0n);
    const simulate = (size: number) => this.#simulate(operation(queue.slice(0, size).map((i) => i.id)));
    while (queue.length > 0) {
      let size = Math.min(queue.length, MAX_BATCH);
      let fees = feesOf(size);
      let sim = fees >= minClaim ? await simulate(size) : null;
      while (sim !== null && (sim.gas > maxGas || sim.abort !== null) && size > 1) {
        const half = Math.ceil(size / 2);
        if (feesOf(half) < minClaim) break;
        size = half;
        fees = feesOf(size);
        sim = await simulate(size);
      }
      const batch = queue.splice(0, size);
      const ids = batch.map((i) => i.id);
      const base = {
        action,
        node_small_id: badge.node_small_id,
        stack_small_ids: ids,
        node_fee_amount: normalizeU64(fees),
        gas_estimate: sim === null ? null : normalizeU64(sim.gas),
      };
      const what = `${ids.length} stack${ids.length === 1 ? '' : 's'} (${batch[0]!.reason}${ids.length > 1 ? ', ...' : ''})`;
      if (fees < minClaim) {
        plan.push({
          ...base,
          will: 'skip',
          reason: `${what}: node fees ${usdc(fees)} are below --autopilot-min-claim ${usdc(minClaim)}; waiting for more`,
        });
      } else if (sim?.abort) {
        plan.push({ ...base, will: 'skip', reason: `${what}: ${wouldAbort(sim.abort)}` });
      } else if (sim !== null && sim.gas > maxGas) {
        plan.push({
          ...base,
          will: 'skip',
          reason: `${what}: estimated gas ${sim.gas} MIST is above --autopilot-max-gas ${maxGas}`,
        });
      } else {
        plan.push({
          ...base,
          will: 'act',
          reason: `${what}: node fees ${usdc(fees)} reach --autopilot-min-claim ${usdc(minClaim)}`,
          operation: operation(ids),
          badge,
        });
      }
    }
    return plan;
  }

  /** A single-stack action, simulated: skipped when it would abort or its gas is above the policy's. */
  async #gated(item: Planned): Promise<Planned> {
    const sim = item.operation ? await this.#simulate(item.operation) : null;
    const planned = { ...item, gas_estimate: sim === null ? null : normalizeU64(sim.gas) };
    if (sim?.abort)
      return { ...planned, will: 'skip', reason: `${item.reason}; but ${wouldAbort(sim.abort)}` };
    if (sim === null || sim.gas <= this.#settings.maxGas) return planned;
    return {
      ...planned,
      will: 'skip',
      reason: `${item.reason}; but its estimated gas ${sim.gas} MIST is above --autopilot-max-gas ${this.#settings.maxGas}`,
    };
  }

  /** A planned claim simulated again, against the state the pass's earlier actions left. */
  async recheck(item: Planned): Promise<Planned> {
    if (item.will !== 'act' || !item.operation || (item.action !== 'claim' && item.action !== 'direct_claim'))
      return item;
    const sim = await this.#simulate(item.operation);
    if (!sim?.abort) return item;
    return { ...item, will: 'skip', reason: `${item.reason}; but ${wouldAbort(sim.abort)}` };
  }

  /** The operation run against the chain's current state, nothing sent; null when the chain cannot say now. */
  async #simulate(operation: Operation): Promise<Simulation | null> {
    try {
      return await this.#chain.simulate(operation);
    } catch (error) {
      // The chain adapter has said an unreachable fullnode once already.
      this.#log[wasLogged(error) ? 'debug' : 'warn'](
        { err: error, operation: operation.kind },
        'could not simulate',
      );
      return null;
    }
  }
}

function percent(fraction: number): string {
  return `${Math.floor(fraction * 1000) / 10}%`;
}

/** An amount in USDC's smallest unit, as USDC (6 decimals). */
function usdc(amount: bigint): string {
  const whole = amount / 1_000_000n;
  const fraction = (amount % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '');
  return `${whole}${fraction ? `.${fraction}` : ''} USDC`;
}

/** Why a simulated action is not sent. */
function wouldAbort(abort: MoveAbort): string {
  return `the chain would abort it now: ${describeAbort(abort)}; nothing is sent, and the next pass tries again`;
}
