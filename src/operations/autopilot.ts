import type { Logger } from 'pino';
import {
  type Badge,
  type Chain,
  type MoveAbort,
  type Operation,
  type Simulation,
  wasLogged,
} from '../chain/chain.ts';
import type { LiveIndexer } from '../indexer/run.ts';
import { backoffDelay } from '../internal/backoff.ts';
import { FailureLog } from '../internal/failure-log.ts';
import type { Metrics } from '../internal/metrics.ts';
import { normalizeU64, type U64, u64ToString } from '../internal/u64.ts';
import { ProblemError } from '../problems/catalog.ts';
import { describeAbort } from '../protocol/aborts.ts';
import { DEFAULT_PARAMETERS, type ProtocolParameters, SecurityLevel } from '../protocol/constants.ts';
import { knownFee } from '../protocol/fees.ts';
import { EMPTY_HASH } from '../protocol/proofs.ts';
import type { ActionView, AutopilotStatus, PlanItem, RunResult } from '../schemas/autopilot.ts';
import type { AutopilotAction, AutopilotActionKind } from '../store/autopilot-actions.ts';
import type { AutopilotStore, Coordination, Lease, ReadStore } from '../store/store.ts';

/** What the autopilot asks of the store. */
type AutopilotStoreRoles = AutopilotStore & ReadStore & Coordination;

import type { Conditions } from './conditions.ts';
import type { GasMeter, Writes } from './writes.ts';

/**
 * The autopilot: the node's clerk. When the indexer applies new events (a new epoch, a settlement, an
 * attestation request) or usage is reported, it plans, and in mode `on` acts:
 * - settles each open stack filled to --autopilot-settle-fill, or idle for --autopilot-settle-idle with
 *   usage recorded, claiming exactly the recorded units (a confidential-compute stack is claimed directly
 *   instead, claim_funds_for_stacks, batched like claims);
 * - attests each stack it was asked to attest, within the window, when it holds a record to attest from;
 * - claims what is claimable, in as few transactions as the contract allows (one claim_funds per badge, up
 *   to MAX_BATCH stacks), when a batch's node fees reach --autopilot-min-claim;
 * - acts only when a transaction's estimated gas stays at or under --autopilot-max-gas.
 * Every action is recorded before it is submitted and completed after; a pending record that a crash
 * left behind blocks its stacks until the chain shows its effect (done) or shows none once the indexer
 * has caught up and the chain's outcome window has passed (not executed). Repeated contract aborts halt
 * it. Its cost follows the stacks that need action: each question is one index range (store.ts).
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

/** The window of the daily gas cap. */
export const GAS_WINDOW_MS = 86_400_000;

/** Most stacks one claim transaction carries (a pure vector argument stays far under Sui's limits). */
export const MAX_BATCH = 500;
/** Consecutive contract aborts after which the autopilot stops acting. */
export const HALT_AFTER_ABORTS = 3;
/** The shortest time between two passes started by pokes. */
const MIN_INTERVAL_MS = 250;
const RECENT_ACTIONS = 50;

export type Trigger = 'start' | 'indexer' | 'usage' | 'timer' | 'run';

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

export interface AutopilotDeps {
  settings: AutopilotSettings;
  chain: Chain;
  store: AutopilotStoreRoles;
  writes: Writes;
  indexer: LiveIndexer;
  metrics: Metrics;
  log: Logger;
  /** The usage source, when usage comes from atoma-node: its own claims are left to it. */
  nodeClaims?: NodeClaims | undefined;
  /** Where its halts and failures are announced as conditions (absent: they are only logged). */
  conditions?: Conditions | undefined;
  /** The time (ms), Date.now unless a test moves it. */
  clock?: (() => number) | undefined;
}

/** The daily gas cap now: what the last 24 hours spent, what is left, and when it frees up. */
interface GasBudget {
  spent: bigint;
  remaining: bigint;
  /** Oldest first: what each counted action spent, and when. */
  entries: { at: number; gas: bigint }[];
}

/** A pause for the daily gas cap: the action that would pass it, and when it fits again. */
interface GasPause {
  needed: bigint;
  spent: bigint;
  freesAt: number;
}

interface Planned extends PlanItem {
  operation?: Operation;
  badge?: Badge;
  /** An attestation that can never be made (the stack in dispute, the window closed): retired after its pass. */
  dead?: true;
}

interface Pass {
  plan: Planned[];
  actions: ActionView[];
}

export class Autopilot {
  readonly #settings: AutopilotSettings;
  readonly #chain: Chain;
  readonly #store: AutopilotStoreRoles;
  readonly #writes: Writes;
  readonly #indexer: LiveIndexer;
  readonly #metrics: Metrics;
  readonly #log: Logger;
  readonly #nodeClaims: NodeClaims | undefined;
  /** Failed passes, said once per reason. */
  readonly #passFailures: FailureLog;
  readonly #conditions: Conditions | undefined;
  readonly #clock: () => number;
  readonly #startedAt: number;
  /** The last recorded skip or dry-run plan per key, so that a decision is recorded once, not every pass. */
  readonly #remembered = new Map<string, string>();
  /** Actions this process is submitting now (their pending records are not a crash's). */
  readonly #inFlight = new Set<number>();
  #lease: Lease | undefined;
  #standby = false;
  #halted: string | undefined;
  #gasPause: GasPause | undefined;
  #aborts = 0;
  #failures = 0;
  #notBefore = 0;
  #lastPass: AutopilotStatus['last_pass'] = null;
  #timer: { at: number; handle: NodeJS.Timeout } | undefined;
  #running: Promise<unknown> | undefined;
  #again: Trigger | undefined;
  #stopped = false;
  #unsubscribe: (() => void) | undefined;

  constructor(deps: AutopilotDeps) {
    this.#settings = deps.settings;
    this.#nodeClaims = deps.nodeClaims;
    this.#chain = deps.chain;
    this.#store = deps.store;
    this.#writes = deps.writes;
    this.#indexer = deps.indexer;
    this.#metrics = deps.metrics;
    this.#log = deps.log;
    this.#passFailures = new FailureLog(deps.log);
    this.#conditions = deps.conditions;
    this.#clock = deps.clock ?? Date.now;
    this.#startedAt = this.#clock();
    // Exported from the start: a budget no pass has counted yet is the whole budget, not none.
    this.#metrics.autopilotGasBudgetRemaining.set(Number(this.#settings.maxGasPerDay));
  }

  get mode(): AutopilotSettings['mode'] {
    return this.#settings.mode;
  }

  /** Follows the indexer: every committed page may bring work (a new epoch, a request, a claimable stack). */
  start(): void {
    if (this.#settings.mode === 'off') return;
    this.#unsubscribe = this.#indexer.onApplied(() => this.poke('indexer'));
    this.poke('start');
  }

  /** Something changed: a pass soon (coalesced; never before a back-off ends). */
  poke(trigger: Trigger): void {
    if (this.#settings.mode === 'off' || this.#stopped) return;
    if (this.#running) {
      this.#again ??= trigger;
      return;
    }
    const last = this.#lastPass ? Date.parse(this.#lastPass.at) : 0;
    this.#schedule(Math.max(this.#clock(), this.#notBefore, last + MIN_INTERVAL_MS), trigger);
  }

  /** Runs one pass now (POST /autopilot/run): acts in mode on, plans otherwise. */
  async run(): Promise<RunResult> {
    const pass = await this.#exclusive('run');
    return {
      mode: this.#settings.mode,
      acted: this.#canAct(),
      plan: pass.plan.map(view),
      actions: pass.actions,
    };
  }

  /** Clears a halt: the next pass acts again. */
  resume(): void {
    if (this.#halted === undefined) return;
    this.#log.warn({ reason: this.#halted }, 'autopilot resumed by the operator');
    this.#halted = undefined;
    this.#aborts = 0;
    this.#failures = 0;
    this.#notBefore = 0;
    this.#metrics.autopilotHalted.set(0);
    void this.#announceHalt('operator');
    this.poke('run');
  }

  get halted(): string | undefined {
    return this.#halted;
  }

  get lastPassAt(): string | undefined {
    return this.#lastPass?.at;
  }

  /** GET /autopilot: the mode, the policy, the last and next pass, what it would do now, what it did. */
  async status(): Promise<AutopilotStatus> {
    const now = this.#clock();
    const [plan, recent, state, budget] = await Promise.all([
      this.#plan(now, new Set()),
      this.#store.listAutopilotActions({ limit: RECENT_ACTIONS }),
      this.#store.getChainState(),
      this.#gasBudget(now),
    ]);
    this.#metrics.autopilotGasBudgetRemaining.set(Number(budget.remaining));
    const pause = this.#gasPause;
    return {
      mode: this.#settings.mode,
      state:
        this.#settings.mode === 'off'
          ? 'off'
          : this.#halted !== undefined
            ? 'halted'
            : this.#standby
              ? 'standby'
              : this.#running
                ? 'running'
                : 'idle',
      halted_reason: this.#halted ?? null,
      policy: {
        settle_fill: this.#settings.settleFill,
        settle_idle_seconds: this.#settings.settleIdleSeconds,
        min_claim: normalizeU64(this.#settings.minClaim),
        max_gas: normalizeU64(this.#settings.maxGas),
        max_gas_per_day: normalizeU64(this.#settings.maxGasPerDay),
      },
      gas_budget: {
        per_day: normalizeU64(this.#settings.maxGasPerDay),
        spent: normalizeU64(budget.spent),
        remaining: normalizeU64(budget.remaining),
        paused: pause !== undefined,
        needed: pause ? normalizeU64(pause.needed) : null,
        frees_at: isoOrNull(
          pause ? pause.freesAt : budget.entries[0] && budget.entries[0].at + GAS_WINDOW_MS,
        ),
      },
      epoch: state.epoch,
      last_pass: this.#lastPass,
      next_pass_at: this.#timer ? new Date(this.#timer.at).toISOString() : null,
      plan: plan.map(view),
      recent_actions: recent.map(actionView),
    };
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#unsubscribe?.();
    if (this.#timer) clearTimeout(this.#timer.handle);
    this.#timer = undefined;
    await this.#running?.catch(() => undefined);
    await this.#lease?.release();
    this.#lease = undefined;
  }

  // --- passes ------------------------------------------------------------------------------------------

  #schedule(at: number, trigger: Trigger): void {
    if (this.#stopped) return;
    if (this.#timer && this.#timer.at <= at) return;
    if (this.#timer) clearTimeout(this.#timer.handle);
    const handle = setTimeout(
      () => {
        this.#timer = undefined;
        this.#exclusive(trigger).catch((error: unknown) => this.#passFailed(error));
      },
      Math.max(0, at - this.#clock()),
    );
    handle.unref();
    this.#timer = { at, handle };
  }

  /** A timed pass that failed: in the log once per reason; the chain adapter says its own unavailability. */
  #passFailed(error: unknown): void {
    if (wasLogged(error)) {
      this.#log.debug({ reason: (error as Error).message }, 'autopilot pass failed');
      return;
    }
    this.#passFailures.failed((error as Error).message, 'error', { err: error }, 'autopilot pass failed');
  }

  /** One pass at a time; a poke during a pass runs another right after. */
  async #exclusive(trigger: Trigger): Promise<Pass> {
    while (this.#running) await this.#running.catch(() => undefined);
    const running = this.#pass(trigger);
    this.#running = running;
    try {
      return await running;
    } finally {
      this.#running = undefined;
      const again = this.#again;
      this.#again = undefined;
      if (again !== undefined) this.poke(again);
    }
  }

  #canAct(): boolean {
    return this.#settings.mode === 'on' && this.#halted === undefined && !this.#standby;
  }

  async #pass(trigger: Trigger): Promise<Pass> {
    const started = performance.now();
    const now = this.#clock();
    // Several daemons sharing a store: one of them, the holder of this lease, acts for the signer.
    if (this.#settings.mode !== 'off' && !this.#lease) {
      this.#lease = await this.#store.tryLease(`autopilot:${this.#chain.signerAddress}`);
      this.#standby = this.#lease === undefined;
      this.#lease?.lost.then(() => {
        this.#lease = undefined;
        this.poke('timer');
      }, ignore);
      // A halt does not survive a restart: one announced before it has ended.
      if (this.#lease) await this.#announceHalt('restart');
    }
    const { blocked, waiting } = await this.#resolvePending(now);
    const plan = await this.#plan(now, blocked);
    const actions: ActionView[] = [];
    const act = this.#canAct();
    let pause: GasPause | undefined;
    for (const planned of plan) {
      // Claims draw on the pooled treasury: what this pass already did may have changed what it can pay.
      let item = actions.length > 0 && act ? await this.#recheck(planned) : planned;
      if (item.will === 'act' && act && this.#halted === undefined) {
        // The daily gas cap, counted from the store before each signature (its own earlier actions too).
        pause ??= await this.#overBudget(item);
        if (pause) item = { ...item, will: 'skip', reason: pausedReason(item.reason, pause, this.#settings) };
      }
      if (item.will === 'act' && act && this.#halted === undefined) {
        actions.push(await this.#perform(item));
      } else if (this.#settings.mode !== 'off') {
        await this.#remember(item, item.will === 'act' ? 'planned' : 'skipped');
      }
    }
    await this.#settleGasPause(pause, actions.length > 0, now);
    // Requests that can never be attested were said once (above); no later pass reads them again.
    if (this.#settings.mode !== 'off' && !this.#standby) await this.#retire(plan);
    this.#passFailures.recovered({ trigger }, 'autopilot passes run again');
    this.#lastPass = {
      at: new Date(now).toISOString(),
      trigger,
      acted: act,
      actions: actions.length,
      duration_ms: Math.round((performance.now() - started) * 100) / 100,
    };
    this.#metrics.autopilotPassDuration.observe((performance.now() - started) / 1000);
    await this.#scheduleNext(now, waiting);
    return { plan, actions };
  }

  async #retire(plan: Planned[]): Promise<void> {
    const byNode = new Map<string, { node: U64; stacks: U64[] }>();
    for (const item of plan) {
      if (!item.dead) continue;
      const key = u64ToString(item.node_small_id);
      const entry = byNode.get(key) ?? { node: item.node_small_id, stacks: [] };
      entry.stacks.push(...item.stack_small_ids);
      byNode.set(key, entry);
    }
    for (const { node, stacks } of byNode.values()) await this.#store.retireAttestationRequests(node, stacks);
  }

  /** The next timer: an idle stack crossing its threshold, a pending record to resolve, a back-off. */
  async #scheduleNext(now: number, waiting: boolean): Promise<void> {
    const idleMs = this.#settings.settleIdleSeconds * 1000;
    const deadlines: number[] = [];
    for (const badge of await this.#writes.badges()) {
      const oldest = await this.#store.oldestUsageAt(badge.node_small_id);
      if (oldest !== null && oldest + idleMs + 1 > now) deadlines.push(oldest + idleMs + 1);
    }
    if (waiting) deadlines.push(now + 1000);
    if (this.#notBefore > now) deadlines.push(this.#notBefore);
    if (this.#gasPause) deadlines.push(Math.max(now + MIN_INTERVAL_MS, this.#gasPause.freesAt));
    if (deadlines.length > 0) this.#schedule(Math.min(...deadlines), 'timer');
  }

  // --- the daily gas cap -------------------------------------------------------------------------------------

  /**
   * What the signer's autopilot spent in the 24 hours before `now`, from the store's records (so it holds
   * across restarts and daemons sharing the store): a transaction's gas used once known, its estimate
   * (else --autopilot-max-gas) while pending, or when a restart found it done without its figure.
   */
  async #gasBudget(now: number): Promise<GasBudget> {
    const nodes = new Set((await this.#writes.badges()).map((b) => u64ToString(b.node_small_id)));
    const entries: GasBudget['entries'] = [];
    let spent = 0n;
    for (const row of await this.#store.listAutopilotSpending(now - GAS_WINDOW_MS + 1)) {
      if (!nodes.has(u64ToString(row.node_small_id))) continue;
      const gas =
        row.gas_used !== null
          ? BigInt(row.gas_used)
          : row.status === 'failed'
            ? 0n
            : BigInt(row.gas_estimate ?? this.#settings.maxGas);
      if (gas === 0n) continue;
      entries.push({ at: row.at, gas });
      spent += gas;
    }
    const cap = this.#settings.maxGasPerDay;
    return { spent, remaining: spent >= cap ? 0n : cap - spent, entries };
  }

  /**
   * Whether signing the item would pass the daily cap: its gas estimate (else --autopilot-max-gas, the
   * most it may cost) on top of what the window spent. If so, when enough of that leaves the window.
   */
  async #overBudget(item: Planned): Promise<GasPause | undefined> {
    const now = this.#clock();
    const budget = await this.#gasBudget(now);
    this.#metrics.autopilotGasBudgetRemaining.set(Number(budget.remaining));
    const needed = item.gas_estimate === null ? this.#settings.maxGas : BigInt(item.gas_estimate);
    const cap = this.#settings.maxGasPerDay;
    if (budget.spent + needed <= cap) return undefined;
    // The first moment the spending still in the window leaves room for it (never, if it alone is above).
    let left = budget.spent;
    let freesAt = now + GAS_WINDOW_MS;
    for (const entry of budget.entries) {
      left -= entry.gas;
      if (left + needed <= cap) {
        freesAt = entry.at + GAS_WINDOW_MS;
        break;
      }
    }
    return { needed, spent: budget.spent, freesAt };
  }

  /** A pass's verdict on the cap: paused (said once), or acting again after a pause (said once). */
  async #settleGasPause(pause: GasPause | undefined, acted: boolean, now: number): Promise<void> {
    const was = this.#gasPause;
    if (pause) {
      this.#gasPause = pause;
      if (!was) {
        this.#log.warn(
          {
            spent: String(pause.spent),
            budget: String(this.#settings.maxGasPerDay),
            frees_at: iso(pause.freesAt),
          },
          'autopilot paused: the next action would pass --autopilot-max-gas-per-day',
        );
      }
    } else if (was && (acted || now >= was.freesAt)) {
      this.#gasPause = undefined;
      this.#log.info('autopilot acts again: its daily gas budget has room');
    }
    if (this.#gasPause !== was) await this.#announceGasPause();
  }

  /** The cap's condition: paused with the budget and when it frees up, or acting again. */
  async #announceGasPause(): Promise<void> {
    if (!this.#conditions) return;
    const address = this.#chain.signerAddress;
    const pause = this.#gasPause;
    const budget = normalizeU64(this.#settings.maxGasPerDay);
    await this.#conditions.report({
      key: `autopilot_gas_budget:${address}`,
      holds: pause !== undefined,
      event: pause
        ? {
            type: 'autopilot_gas_budget_spent',
            node_small_id: null,
            data: {
              address,
              budget_mist: budget,
              spent_mist: normalizeU64(pause.spent),
              needed_mist: normalizeU64(pause.needed),
              frees_at: iso(pause.freesAt),
            },
          }
        : {
            type: 'autopilot_gas_budget_restored',
            node_small_id: null,
            data: { address, budget_mist: budget },
          },
    });
  }

  // --- planning -------------------------------------------------------------------------------------------

  async #plan(now: number, blocked: Set<U64>): Promise<Planned[]> {
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
  async #recheck(item: Planned): Promise<Planned> {
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

  // --- acting -------------------------------------------------------------------------------------------------

  /** Records the action, submits it through the writes (the same checks as a request), records the outcome. */
  async #perform(item: Planned): Promise<ActionView> {
    const now = this.#clock();
    const record: Omit<AutopilotAction, 'id'> = {
      at: now,
      updated_at: now,
      kind: item.action,
      node_small_id: item.node_small_id,
      stack_small_ids: item.stack_small_ids,
      status: 'pending',
      reason: item.reason,
      node_fee_amount: item.node_fee_amount,
      gas_estimate: item.gas_estimate,
      gas_used: null,
      tx_digests: [],
      error: null,
    };
    const id = await this.#store.insertAutopilotAction(record);
    // The gas its transactions use, as the chain reports each (those that aborted too).
    let used: bigint | undefined;
    const meter = (mist: bigint) => {
      used = (used ?? 0n) + mist;
    };
    this.#inFlight.add(id);
    let outcome: Pick<AutopilotAction, 'status' | 'tx_digests' | 'error'> & { node_fee_amount?: U64 | null };
    try {
      outcome = await this.#submit(item, meter);
    } catch (error) {
      if (!(error instanceof ProblemError)) throw error;
      const digests =
        error.extensions.tx_digests ?? (error.extensions.tx_digest ? [error.extensions.tx_digest] : []);
      outcome = {
        status: 'failed',
        tx_digests: digests as string[],
        error: `${error.code}: ${error.message}`,
      };
      this.#failed(
        error.code === 'transaction_failed',
        `${item.action} of ${item.stack_small_ids.join(', ')}: ${error.message}`,
      );
    } finally {
      this.#inFlight.delete(id);
    }
    if (outcome.status === 'succeeded') {
      this.#aborts = 0;
      this.#failures = 0;
    }
    const change = {
      ...outcome,
      updated_at: this.#clock(),
      ...(used === undefined ? {} : { gas_used: normalizeU64(used) }),
    };
    await this.#store.updateAutopilotAction(id, change);
    await this.#announce(id, item, outcome);
    this.#metrics.autopilotActions.inc({ kind: item.action, outcome: outcome.status });
    this.#log.info(
      {
        action: item.action,
        stacks: item.stack_small_ids,
        status: outcome.status,
        digests: outcome.tx_digests,
      },
      'autopilot action',
    );
    return actionView({ ...record, ...change, id });
  }

  async #submit(
    item: Planned,
    meter: GasMeter,
  ): Promise<Pick<AutopilotAction, 'status' | 'tx_digests' | 'error'> & { node_fee_amount?: U64 | null }> {
    const badge = item.badge!;
    const stacks = item.stack_small_ids.map(Number);
    switch (item.action) {
      case 'settle':
      case 'attest': {
        const result =
          item.action === 'settle'
            ? await this.#writes.trySettle({ stack_small_ids: stacks, node_badge_id: badge.badge_id }, meter)
            : await this.#writes.submitAttestations(
                { stack_small_ids: stacks, node_small_id: Number(badge.node_small_id) },
                meter,
              );
        const failed = result.results.find((r) => r.status !== 'success');
        return {
          status: failed ? 'failed' : 'succeeded',
          tx_digests: result.tx_digests,
          error: failed?.error ? `${failed.error.code}: ${failed.error.detail}` : null,
        };
      }
      case 'claim':
      case 'direct_claim': {
        const result = await this.#writes.claimFunds(
          { stack_small_ids: stacks, node_badge_id: badge.badge_id },
          meter,
        );
        const failed = result.results.filter((r) => r.status !== 'success');
        return {
          status: failed.length > 0 ? 'failed' : 'succeeded',
          tx_digests: result.tx_digests,
          error:
            failed.length > 0
              ? failed.map((r) => `${r.stack_small_id}: ${r.error?.detail}`).join('; ')
              : null,
          node_fee_amount: result.total.node_fee_amount,
        };
      }
    }
  }

  /** A failed action: back off; a run of contract aborts halts the autopilot rather than burn gas. */
  #failed(aborted: boolean, detail: string): void {
    this.#failures += 1;
    this.#notBefore = this.#clock() + backoffDelay(this.#failures, 1000, 300_000);
    if (!aborted) return;
    this.#aborts += 1;
    if (this.#aborts < HALT_AFTER_ABORTS) return;
    this.#halted = `${this.#aborts} contract aborts in a row, the last: ${detail}`;
    this.#metrics.autopilotHalted.set(1);
    this.#log.error(
      { reason: this.#halted },
      'autopilot halted: it stops acting until POST /autopilot/resume or a restart',
    );
  }

  /**
   * The conditions an action's outcome starts or ends: the autopilot failing (from a failed action to the
   * next that succeeds) and halted (after HALT_AFTER_ABORTS contract aborts in a row).
   */
  async #announce(
    id: number,
    item: Planned,
    outcome: Pick<AutopilotAction, 'status' | 'error'>,
  ): Promise<void> {
    if (!this.#conditions || (outcome.status !== 'failed' && outcome.status !== 'succeeded')) return;
    const failed = outcome.status === 'failed';
    const address = this.#chain.signerAddress;
    await this.#conditions.report({
      key: `autopilot_failing:${address}`,
      holds: failed,
      event: {
        type: failed ? 'autopilot_failing' : 'autopilot_recovered',
        node_small_id: null,
        data: {
          address,
          action_id: id,
          action: item.action,
          node_small_id: item.node_small_id,
          stack_small_ids: item.stack_small_ids,
          error: outcome.error,
        },
      },
    });
    if (this.#halted !== undefined) await this.#announceHalt();
  }

  /** The halt's start (while halted), or its end, by the operator or by a restart. */
  async #announceHalt(endedBy?: 'operator' | 'restart'): Promise<void> {
    if (!this.#conditions) return;
    const address = this.#chain.signerAddress;
    const halted = this.#halted !== undefined;
    await this.#conditions.report({
      key: `autopilot_halted:${address}`,
      holds: halted,
      event: halted
        ? { type: 'autopilot_halted', node_small_id: null, data: { address, reason: this.#halted } }
        : { type: 'autopilot_resumed', node_small_id: null, data: { address, by: endedBy ?? 'operator' } },
    });
  }

  /** Records a decision not to act (or a dry run's plan) once, not at every pass that makes it again. */
  async #remember(item: Planned, status: 'skipped' | 'planned'): Promise<void> {
    const key = `${item.action}:${item.node_small_id}:${item.stack_small_ids.join(',')}`;
    const gist = `${status}:${item.reason.replace(/[0-9.]+/g, '#')}`;
    if (this.#remembered.get(key) === gist) return;
    this.#remembered.set(key, gist);
    if (this.#remembered.size > 10_000) this.#remembered.clear();
    const now = this.#clock();
    await this.#store.insertAutopilotAction({
      at: now,
      updated_at: now,
      kind: item.action,
      node_small_id: item.node_small_id,
      stack_small_ids: item.stack_small_ids,
      status,
      reason: item.reason,
      node_fee_amount: item.node_fee_amount,
      gas_estimate: item.gas_estimate,
      gas_used: null,
      tx_digests: [],
      error: null,
    });
    this.#metrics.autopilotActions.inc({ kind: item.action, outcome: status });
  }

  // --- after a crash --------------------------------------------------------------------------------------------

  /**
   * Pending records that no submission of this process holds were left by a crash: done when the store
   * shows their effect; not executed when it does not once the indexer has caught up since the start and
   * the chain's outcome window has passed; until then their stacks are not acted on again.
   */
  async #resolvePending(now: number): Promise<{ blocked: Set<U64>; waiting: boolean }> {
    const blocked = new Set<U64>();
    let waiting = false;
    const caughtUp = (this.#indexer.lastCaughtUpAt ?? 0) >= this.#startedAt;
    for (const action of await this.#store.listAutopilotActions({ limit: 1000, pending: true })) {
      if (this.#inFlight.has(action.id)) {
        for (const id of action.stack_small_ids) blocked.add(id);
        continue;
      }
      if (await this.#effective(action)) {
        await this.#store.updateAutopilotAction(action.id, {
          status: 'succeeded',
          tx_digests: action.tx_digests,
          error: 'recorded after a restart: the chain shows it done',
          updated_at: now,
        });
        continue;
      }
      if (!caughtUp || now - action.updated_at < this.#chain.outcomeWindowMs) {
        for (const id of action.stack_small_ids) blocked.add(id);
        waiting = true;
        continue;
      }
      await this.#store.updateAutopilotAction(action.id, {
        status: 'not_executed',
        tx_digests: action.tx_digests,
        error: 'no effect on chain after a restart: it never executed; its stacks may be acted on again',
        updated_at: now,
      });
    }
    return { blocked, waiting };
  }

  /** Whether the store shows the action's effect on every one of its stacks. */
  async #effective(action: AutopilotAction): Promise<boolean> {
    for (const id of action.stack_small_ids) {
      const ticket = await this.#store.getTicket(id);
      switch (action.kind) {
        case 'settle':
          if (!ticket) return false;
          break;
        case 'claim':
          if (!ticket?.is_claimed) return false;
          break;
        case 'direct_claim':
          if (!(await this.#store.getStack(id))?.is_claimed) return false;
          break;
        case 'attest': {
          const attested = ticket?.already_attested_nodes.includes(String(action.node_small_id)) ?? false;
          const disputed = (await this.#store.listDisputesOwn(action.node_small_id)).some(
            (d) => d.stack_small_id === id,
          );
          if (!attested && !disputed) return false;
          break;
        }
      }
    }
    return true;
  }
}

const ignore = () => undefined;

function percent(fraction: number): string {
  return `${Math.floor(fraction * 1000) / 10}%`;
}

/** An amount in USDC's smallest unit, as USDC (6 decimals). */
function usdc(amount: bigint): string {
  const whole = amount / 1_000_000n;
  const fraction = (amount % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '');
  return `${whole}${fraction ? `.${fraction}` : ''} USDC`;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function isoOrNull(ms: number | undefined): string | null {
  return ms === undefined ? null : iso(ms);
}

/** Why an action waits for the daily gas cap. */
function pausedReason(reason: string, pause: GasPause, settings: AutopilotSettings): string {
  return `${reason}; but its gas (${pause.needed} MIST) on top of the ${pause.spent} MIST spent in the last 24 hours would pass --autopilot-max-gas-per-day ${settings.maxGasPerDay}: paused until ${iso(pause.freesAt)}`;
}

function view(item: Planned): PlanItem {
  const { operation: _operation, badge: _badge, dead: _dead, ...plain } = item;
  return plain;
}

function actionView(action: AutopilotAction): ActionView {
  return {
    id: action.id,
    at: new Date(action.at).toISOString(),
    updated_at: new Date(action.updated_at).toISOString(),
    action: action.kind as AutopilotActionKind,
    node_small_id: action.node_small_id,
    stack_small_ids: action.stack_small_ids,
    status: action.status,
    reason: action.reason,
    node_fee_amount: action.node_fee_amount,
    gas_estimate: action.gas_estimate,
    gas_used: action.gas_used,
    tx_digests: action.tx_digests,
    error: action.error,
  };
}

/** Why a simulated action is not sent. */
function wouldAbort(abort: MoveAbort): string {
  return `the chain would abort it now: ${describeAbort(abort)}; nothing is sent, and the next pass tries again`;
}
