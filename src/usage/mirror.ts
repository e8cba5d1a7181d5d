import type { Logger } from 'pino';
import { backoffDelay } from '../internal/backoff.ts';
import type { Metrics } from '../internal/metrics.ts';
import { type U64, u64ToString } from '../internal/u64.ts';
import type { NewNodeEvent } from '../store/node-events.ts';
import type { Coordination, FollowedStack, Lease, MirroredUsage, UsageStore } from '../store/store.ts';
import { type AtomaStack, AtomaStateError } from './atoma-state.ts';

/**
 * The usage source: every poll interval, the operator's open stacks' usage is read from the node's
 * inference service's database (atoma-state.ts) and set onto the same stacks here (UsageStore
 * .mirrorStackUsage), so that the earnings, the autopilot and the console work from what the node served.
 * A mirror, not a sum: a repeated poll, a restart or a change made while this daemon was down all end
 * with each stack holding the source's value. Only the stacks this daemon follows are read (its nodes'
 * open stacks, known from the chain's events), so rows of other nodes' stacks, or of stacks never seen on
 * chain, are never read. A source that cannot be read never stops the daemon: the last values stay, the
 * state says why (GET /status, /metrics, the log once per reason), a node event says it was lost and when
 * it came back, and the poll is tried again with back-off. With several daemons on one PostgreSQL database,
 * one of them (the holder of the `usage-source` lease) polls.
 */

/** The source as the mirror reads it (atoma-state.ts, or a test's). */
export interface UsageSourceReader {
  read(ids: readonly U64[]): Promise<Map<string, AtomaStack>>;
  close(): Promise<void>;
}

export type UsageSourceState = 'starting' | 'connected' | 'lost' | 'standby' | 'stopped';

/** What GET /status says of the source. */
export interface UsageSourceStatus {
  kind: 'atoma-state';
  /** Where it reads, without a password. */
  location: string;
  state: UsageSourceState;
  /** Why the source is lost (or was, last). */
  error: string | null;
  /** When its last poll answered (ms), null before the first. */
  last_poll_at: number | null;
  /** Seconds since then: how far behind the mirrored usage may be. */
  behind_seconds: number | null;
  stacks_followed: number;
  /** atoma-node's own claims pending: followed stacks it has locked to claim itself (the autopilot leaves them). */
  stacks_locked_by_node: number;
}

/** How often the followed stacks without usage are read again whole (a settled one leaves then). */
const RESCAN_MS = 10 * 60 * 1000;
/** Back-off after failed polls: capped. */
const MAX_BACKOFF_MS = 30_000;
/** How often a daemon on standby (another holds the lease) asks for it again. */
const STANDBY_RETRY_MS = 10_000;

/** The condition of a source that does not answer (its key in the store's conditions). */
export const USAGE_SOURCE_LOST = 'usage_source_lost';

/** What announces a condition once when it starts and once when it ends (operations/conditions.ts). */
export interface ConditionReporter {
  report(report: { key: string; holds: boolean; event: NewNodeEvent }): Promise<void>;
}

export interface UsageMirrorOptions {
  store: UsageStore & Coordination;
  /**
   * Where the source's loss and return are announced (operations/conditions.ts): once when it is lost and
   * once when it answers again, across restarts and the daemons sharing a store.
   */
  conditions: ConditionReporter;
  source: UsageSourceReader;
  /** Where the source is, safe to print. */
  location: string;
  /** The operator's nodes, whose open stacks are followed. */
  nodes: () => Promise<readonly U64[]>;
  pollIntervalMs: number;
  log: Logger;
  metrics: Metrics;
  /** Called after a poll that changed some stack's usage (the autopilot takes a pass). */
  onChange?: () => void;
  now?: () => number;
}

/** A followed node's open stacks: by small id, each as this daemon holds it. */
interface Followed {
  stacks: Map<string, FollowedStack>;
  /** The highest small id seen: stacks after it are new. */
  maxId: U64 | null;
  /** When its stacks without usage were last read whole. */
  scannedAt: number;
}

export class UsageMirror {
  readonly #options: UsageMirrorOptions;
  readonly #now: () => number;
  readonly #followed = new Map<string, Followed>();
  /** atoma-state's rows of the followed stacks, as last read (the autopilot checks locks in them). */
  #rows = new Map<string, AtomaStack>();
  #state: UsageSourceState = 'starting';
  #error: string | null = null;
  #lastPollAt: number | null = null;
  /** When the source was lost (for the event that says it came back). */
  #lostAt: number | null = null;
  #failures = 0;
  #running = false;
  #timer: NodeJS.Timeout | undefined;
  #loop: Promise<void> | undefined;
  #wake: (() => void) | undefined;
  #lease: Lease | undefined;

  constructor(options: UsageMirrorOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    options.metrics.measureUsageSourceLag(() => {
      const at = this.#lastPollAt;
      return at === null ? undefined : Math.max(0, (this.#now() - at) / 1000);
    });
  }

  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#loop = this.#run();
  }

  async stop(): Promise<void> {
    this.#running = false;
    clearTimeout(this.#timer);
    this.#wake?.();
    await this.#loop;
    await this.#lease?.release();
    await this.#options.source.close();
    this.#state = 'stopped';
  }

  status(): UsageSourceStatus {
    const at = this.#lastPollAt;
    let locked = 0;
    for (const row of this.#rows.values()) if (row.is_locked_for_claim) locked += 1;
    return {
      kind: 'atoma-state',
      location: this.#options.location,
      state: this.#state,
      error: this.#error,
      last_poll_at: at,
      behind_seconds: at === null ? null : Math.max(0, Math.round((this.#now() - at) / 100) / 10),
      stacks_followed: this.#count(),
      stacks_locked_by_node: locked,
    };
  }

  /**
   * Whether atoma-node may act on the stack itself: it locked the stack to claim it (a confidential stack
   * past 95 %: upstream-daemon.md §3.5), as the source said at its last poll. The autopilot leaves it.
   */
  lockedByNode(stack: U64): boolean {
    return this.#rows.get(u64ToString(stack))?.is_locked_for_claim === true;
  }

  /** Reads the stack from the source now, and mirrors it: the latest word before the autopilot acts on it. */
  async refresh(stack: U64): Promise<AtomaStack | undefined> {
    const row = (await this.#options.source.read([stack])).get(u64ToString(stack));
    if (row !== undefined) {
      this.#rows.set(u64ToString(stack), row);
      await this.#mirror([row]);
    }
    return row;
  }

  #count(): number {
    let n = 0;
    for (const node of this.#followed.values()) n += node.stacks.size;
    return n;
  }

  async #run(): Promise<void> {
    const { metrics, log } = this.#options;
    while (this.#running) {
      if (this.#lease === undefined && !(await this.#takeLease())) {
        await this.#sleep(STANDBY_RETRY_MS);
        continue;
      }
      const started = performance.now();
      try {
        await this.#poll();
        metrics.usageSourcePolls.inc({ outcome: 'ok' });
        metrics.usageSourcePollDuration.observe((performance.now() - started) / 1000);
        await this.#answered();
        await this.#sleep(this.#options.pollIntervalMs);
      } catch (error) {
        metrics.usageSourcePolls.inc({ outcome: 'failed' });
        await this.#failed(error);
        this.#failures += 1;
        if (!(error instanceof AtomaStateError)) log.debug({ err: error }, 'usage source poll failed');
        await this.#sleep(
          Math.max(this.#options.pollIntervalMs, backoffDelay(this.#failures, 1000, MAX_BACKOFF_MS)),
        );
      }
    }
  }

  /** The lease of the usage source among the daemons sharing the store; false: another holds it. */
  async #takeLease(): Promise<boolean> {
    try {
      const lease = await this.#options.store.tryLease('usage-source');
      if (lease === undefined) {
        this.#setState('standby', null);
        return false;
      }
      this.#lease = lease;
      void lease.lost.then(() => {
        if (this.#lease === lease) this.#lease = undefined;
      });
      if (this.#state === 'standby') this.#setState('starting', null);
      return true;
    } catch {
      return false;
    }
  }

  /** One poll: the followed stacks brought up to date, read from the source, mirrored. */
  async #poll(): Promise<void> {
    const nodes = await this.#options.nodes();
    const now = this.#now();
    for (const key of this.#followed.keys()) {
      if (!nodes.some((n) => u64ToString(n) === key)) this.#followed.delete(key);
    }
    for (const node of nodes) await this.#follow(node, now);
    this.#options.metrics.usageSourceStacks.set(this.#count());
    const ids: U64[] = [];
    for (const followed of this.#followed.values()) {
      for (const stack of followed.stacks.values()) ids.push(stack.stack_small_id);
    }
    this.#rows = ids.length === 0 ? new Map() : await this.#options.source.read(ids);
    await this.#mirror([...this.#rows.values()]);
  }

  /** A node's followed stacks: read whole now and then, else only its stacks with usage and its new ones. */
  async #follow(node: U64, now: number): Promise<void> {
    const key = u64ToString(node);
    let followed = this.#followed.get(key);
    const whole = followed === undefined || now - followed.scannedAt >= RESCAN_MS;
    const found = await this.#options.store.listFollowedStacks(node, whole ? null : followed!.maxId);
    if (whole || followed === undefined) {
      followed = { stacks: new Map(), maxId: null, scannedAt: now };
      this.#followed.set(key, followed);
    }
    for (const stack of found) {
      followed.stacks.set(u64ToString(stack.stack_small_id), stack);
      if (followed.maxId === null || BigInt(stack.stack_small_id) > BigInt(followed.maxId)) {
        followed.maxId = stack.stack_small_id;
      }
    }
  }

  /** Sets the source's values onto the stacks whose usage differs here. */
  async #mirror(rows: readonly AtomaStack[]): Promise<void> {
    const changed: MirroredUsage[] = [];
    for (const row of rows) {
      const followed = this.#followed.get(u64ToString(row.selected_node_id));
      const stack = followed?.stacks.get(u64ToString(row.stack_small_id));
      // A row that names another node than the stack's here, or a stack not followed: left alone.
      if (stack === undefined) continue;
      const already =
        BigInt(row.already_computed_units) > BigInt(stack.num_compute_units)
          ? stack.num_compute_units
          : row.already_computed_units;
      if (
        BigInt(already) === BigInt(stack.already_computed_units) &&
        BigInt(row.num_total_messages) === BigInt(stack.num_total_messages)
      ) {
        continue;
      }
      changed.push({
        stack_small_id: row.stack_small_id,
        selected_node_id: row.selected_node_id,
        already_computed_units: already,
        num_total_messages: row.num_total_messages,
      });
    }
    if (changed.length === 0) return;
    const outcomes = await this.#options.store.mirrorStackUsage(changed, this.#now());
    let set = 0;
    outcomes.forEach((outcome, i) => {
      const usage = changed[i]!;
      const followed = this.#followed.get(u64ToString(usage.selected_node_id));
      const id = u64ToString(usage.stack_small_id);
      const stack = followed?.stacks.get(id);
      if (followed === undefined || stack === undefined) return;
      if (outcome === 'closed') followed.stacks.delete(id);
      else {
        stack.already_computed_units = usage.already_computed_units;
        stack.num_total_messages = usage.num_total_messages;
        if (outcome === 'set') set += 1;
      }
    });
    if (set > 0) {
      this.#options.metrics.usageSourceChanges.inc(set);
      this.#options.onChange?.();
    }
  }

  /** A poll answered: the source is connected (again: say so once, with how long it was lost). */
  async #answered(): Promise<void> {
    const now = this.#now();
    this.#lastPollAt = now;
    this.#failures = 0;
    this.#options.metrics.usageSourceUp.set(1);
    this.#options.metrics.usageSourceLastPoll.set(now / 1000);
    if (this.#state === 'connected') return;
    const lostAt = this.#lostAt;
    this.#lostAt = null;
    this.#setState('connected', null);
    this.#options.log.info(
      { source: this.#options.location },
      lostAt !== null ? 'the usage source answers again' : 'following usage from atoma-state',
    );
    // Said only if it was announced lost (by this process, or by one before a restart).
    await this.#announce(false, 'usage_source_restored', {
      source: 'atoma-state',
      lost_seconds: lostAt === null ? null : Math.round((now - lostAt) / 1000),
    });
  }

  /** A poll failed: the source is lost (say so once per reason), the last values stay. */
  async #failed(error: unknown): Promise<void> {
    const message = error instanceof Error ? error.message : String(error);
    this.#options.metrics.usageSourceUp.set(0);
    if (this.#state === 'lost' && this.#error === message) return;
    const wasLost = this.#state === 'lost';
    this.#setState('lost', message);
    this.#options.log.warn(
      { source: this.#options.location, reason: error instanceof AtomaStateError ? error.reason : 'failed' },
      `the usage source cannot be read (${message}); the last usage stays, retrying with back-off`,
    );
    if (wasLost) return;
    this.#lostAt = this.#now();
    await this.#announce(true, 'usage_source_lost', {
      source: 'atoma-state',
      reason: error instanceof AtomaStateError ? error.reason : 'failed',
      detail: message,
    });
  }

  /** The lost condition, a node event about everyone (the source serves all the operator's nodes). */
  #announce(
    holds: boolean,
    type: 'usage_source_lost' | 'usage_source_restored',
    data: Record<string, unknown>,
  ) {
    return this.#options.conditions.report({
      key: USAGE_SOURCE_LOST,
      holds,
      event: { type, node_small_id: null, data },
    });
  }

  #setState(state: UsageSourceState, error: string | null): void {
    this.#state = state;
    this.#error = error;
  }

  #sleep(ms: number): Promise<void> {
    if (!this.#running) return Promise.resolve();
    return new Promise((resolve) => {
      this.#wake = resolve;
      this.#timer = setTimeout(resolve, ms);
    });
  }
}
