import type { Logger } from 'pino';
import type { Chain } from '../chain/chain.ts';
import type { LiveIndexer } from '../indexer/run.ts';
import type { Metrics } from '../internal/metrics.ts';
import { normalizeU64 } from '../internal/u64.ts';
import type { NewNodeEvent } from '../store/node-events.ts';
import type { ConditionStore } from '../store/store.ts';
import { indexerReadiness } from './readiness.ts';

/**
 * The conditions an operator needs to hear of (docs/NODE-EVENTS.md, "Conditions"), each announced by a node
 * event once when it starts and once when it ends, however often it is checked: the signer's SUI for gas
 * below --gas-warning-mist, the indexer behind, the autopilot halted or failing. What was announced is kept
 * in the store with the event (ConditionStore), so a restart, or another daemon on the same database,
 * announces nothing that was announced and still holds; it does announce the end of a condition that ended
 * while it was down (an autopilot halt, which a restart clears).
 */

/** A condition as one check sees it: whether it holds, and the event that says so. */
export interface ConditionReport {
  /** Its name and what it is about (the store's key), e.g. `signer_gas_low:0x12…`. */
  key: string;
  holds: boolean;
  /** Its start event when it holds, its end event when it does not. */
  event: NewNodeEvent;
}

/** Announces conditions through the store, asking it only when this process sees a change. */
export class Conditions {
  readonly #store: ConditionStore;
  readonly #log: Logger;
  /** What this process last knew of each condition: the store is asked only when a check differs. */
  #known: Promise<Map<string, boolean>> | undefined;

  constructor(deps: { store: ConditionStore; log: Logger }) {
    this.#store = deps.store;
    this.#log = deps.log;
  }

  /** Records the condition's state; its event goes out when that changes what the store held. */
  async report(report: ConditionReport): Promise<void> {
    try {
      const known = await this.#knownConditions();
      if ((known.get(report.key) ?? false) === report.holds) return;
      const changed = await this.#store.setCondition(report.key, report.holds, report.event, Date.now());
      known.set(report.key, report.holds);
      if (changed) {
        this.#log.info({ condition: report.key, holds: report.holds, event: report.event.type }, 'condition');
      }
    } catch (error) {
      this.#log.warn(
        { err: error, condition: report.key },
        'could not record a condition; the next check retries',
      );
    }
  }

  /** Whether this process knows the condition to hold (as recorded, or as it last reported it). */
  async holds(key: string): Promise<boolean> {
    return (await this.#knownConditions()).get(key) ?? false;
  }

  #knownConditions(): Promise<Map<string, boolean>> {
    this.#known ??= this.#store.listConditions().then(
      (rows) => new Map(rows.map((row) => [row.key, row.holds])),
      (error: unknown) => {
        this.#known = undefined;
        throw error;
      },
    );
    return this.#known;
  }
}

/** The key of the indexer's condition: behind the chain head, or unable to follow it. */
export const INDEXER_BEHIND = 'indexer_behind';
/** The key of the signer's gas condition. */
export const gasLowKey = (address: string) => `signer_gas_low:${address}`;

/** How often the signer's SUI balance is read (a fullnode call on Sui). */
const GAS_CHECK_MS = 15_000;
/** How often the indexer is checked: its lag grows while nothing happens. */
const INDEXER_CHECK_MS = 1000;

export interface ConditionWatchDeps {
  conditions: Conditions;
  chain: Chain;
  indexer: LiveIndexer;
  /** --ready-max-lag: the indexer is behind past this lag, or when it cannot follow for this long. */
  maxLagSeconds: number;
  /** --gas-warning-mist: the signer's SUI below this is a condition. */
  gasWarningMist: bigint;
  metrics: Metrics;
  log: Logger;
}

/**
 * Checks the conditions the daemon observes itself: the indexer (by the daemon that runs it; the others
 * follow the same events) every second, the signer's gas every 15 s.
 */
export class ConditionWatch {
  readonly #deps: ConditionWatchDeps;
  readonly #timers: NodeJS.Timeout[] = [];
  /** Since when this process has seen the indexer not ready for a reason other than its lag. */
  #notReadySince: number | undefined;
  #checking: Promise<void> | undefined;

  constructor(deps: ConditionWatchDeps) {
    this.#deps = deps;
    deps.metrics.gasWarningThreshold.set(Number(deps.gasWarningMist));
  }

  start(): void {
    const indexer = setInterval(() => void this.checkIndexer(), INDEXER_CHECK_MS);
    const gas = setInterval(() => void this.checkGas(), GAS_CHECK_MS);
    indexer.unref();
    gas.unref();
    this.#timers.push(indexer, gas);
    void this.checkGas();
  }

  stop(): void {
    for (const timer of this.#timers) clearInterval(timer);
  }

  /**
   * The indexer is behind when /ready says so for its lag (already past --ready-max-lag), or when it has
   * been unable to follow for --ready-max-lag seconds (the chain unreachable, no head reached since the
   * start): a restart or a fullnode's blip of a few seconds is not worth a message.
   */
  async checkIndexer(now = Date.now()): Promise<void> {
    const { indexer, chain, maxLagSeconds } = this.#deps;
    if (!indexer.isLeader) return;
    const readiness = indexerReadiness(indexer, chain, maxLagSeconds, now);
    if (readiness.ready || readiness.lag_seconds !== null) this.#notReadySince = undefined;
    else this.#notReadySince ??= now;
    const behind =
      !readiness.ready &&
      (readiness.lag_seconds !== null || now - this.#notReadySince! >= maxLagSeconds * 1000);
    if (!behind && !readiness.ready) return;
    await this.#deps.conditions.report({
      key: INDEXER_BEHIND,
      holds: behind,
      event: {
        type: 'indexer_status',
        node_small_id: null,
        data: {
          ready: readiness.ready,
          lag_seconds: readiness.lag_seconds === null ? null : Math.round(readiness.lag_seconds * 10) / 10,
          detail: readiness.detail,
        },
      },
    });
  }

  /** Reads the signer's SUI, exports it, and reports whether it is below the warning. */
  checkGas(): Promise<void> {
    this.#checking ??= this.#checkGas().finally(() => {
      this.#checking = undefined;
    });
    return this.#checking;
  }

  async #checkGas(): Promise<void> {
    const { chain, gasWarningMist, metrics, conditions, log } = this.#deps;
    if (!chain.balances) return;
    let sui: bigint;
    try {
      const balance = (await chain.balances()).SUI;
      if (balance === undefined) return;
      sui = BigInt(balance);
    } catch (error) {
      log.debug({ err: error }, 'could not read the signer balance');
      return;
    }
    metrics.signerGasBalance.set(Number(sui));
    const low = sui < gasWarningMist;
    const data = {
      address: chain.signerAddress,
      balance_mist: normalizeU64(sui),
      threshold_mist: normalizeU64(gasWarningMist),
    };
    await conditions.report({
      key: gasLowKey(chain.signerAddress),
      holds: low,
      event: { type: low ? 'signer_gas_low' : 'signer_gas_restored', node_small_id: null, data },
    });
  }
}
