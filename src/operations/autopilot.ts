import type { Logger } from 'pino';
import { type Chain, wasLogged } from '../chain/chain.ts';
import type { LiveIndexer } from '../indexer/run.ts';
import { backoffDelay } from '../internal/backoff.ts';
import { FailureLog } from '../internal/failure-log.ts';
import type { Metrics } from '../internal/metrics.ts';
import { normalizeU64, type U64, u64ToString } from '../internal/u64.ts';
import { ProblemError } from '../problems/catalog.ts';
import type { ActionView, AutopilotStatus, PlanItem, RunResult } from '../schemas/autopilot.ts';
import type { AutopilotAction, AutopilotActionKind } from '../store/autopilot-actions.ts';
import type { AutopilotStore, Coordination, Lease, ReadStore } from '../store/store.ts';

import { AutopilotPlanner, type AutopilotSettings, type NodeClaims, type Planned } from './autopilot-plan.ts';
import type { Conditions } from './conditions.ts';
import type { GasMeter, Writes } from './writes.ts';

/** What the autopilot asks of the store. */
type AutopilotStoreRoles = AutopilotStore & ReadStore & Coordination;

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

/** The window of the daily gas cap. */
export const GAS_WINDOW_MS = 86_400_000;

/** Consecutive contract aborts after which the autopilot stops acting. */
export const HALT_AFTER_ABORTS = 3;
/** The shortest time between two passes started by pokes. */
const MIN_INTERVAL_MS = 250;
const RECENT_ACTIONS = 50;

export {
  type AutopilotSettings,
  CONFIDENTIAL_CLAIM_FILL,
  MAX_BATCH,
  type NodeClaims,
} from './autopilot-plan.ts';

export type Trigger = 'start' | 'indexer' | 'usage' | 'timer' | 'run';

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
  readonly #planner: AutopilotPlanner;
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
    this.#chain = deps.chain;
    this.#store = deps.store;
    this.#writes = deps.writes;
    this.#indexer = deps.indexer;
    this.#metrics = deps.metrics;
    this.#log = deps.log;
    this.#planner = new AutopilotPlanner({
      settings: deps.settings,
      chain: deps.chain,
      store: deps.store,
      writes: deps.writes,
      log: deps.log,
      nodeClaims: deps.nodeClaims,
    });
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
      this.#planner.plan(now, new Set()),
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
    const plan = await this.#planner.plan(now, blocked);
    const actions: ActionView[] = [];
    const act = this.#canAct();
    let pause: GasPause | undefined;
    for (const planned of plan) {
      // Claims draw on the pooled treasury: what this pass already did may have changed what it can pay.
      let item = actions.length > 0 && act ? await this.#planner.recheck(planned) : planned;
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
