import type { FastifyBaseLogger } from 'fastify';
import type { AuditEntry, AuditStore } from '../store/store.ts';

/** How long the audit trail keeps its entries unless --audit-retention-days says. */
export const DEFAULT_AUDIT_RETENTION_DAYS = 90;
/** Entries wait at most this long in memory before they are written. */
const FLUSH_MS = 200;
/** Entries kept in memory while the store refuses them; beyond, the oldest are dropped (and said). */
const MAX_PENDING = 50_000;
const PRUNE_EVERY_MS = 60 * 60 * 1000;
const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * The audit trail's writer: requests record their entry (synchronously, no promise), and the entries are
 * written in batches within FLUSH_MS, off the requests' path. close() writes what is left, so a normal
 * shutdown loses none. Entries older than the retention are deleted at start and every hour.
 */
export class AuditTrail {
  readonly #store: AuditStore;
  readonly #log: FastifyBaseLogger;
  readonly #retentionMs: number;
  readonly #now: () => number;
  #pending: AuditEntry[] = [];
  #timer: NodeJS.Timeout | undefined;
  #pruner: NodeJS.Timeout | undefined;
  #writing: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(
    store: AuditStore,
    log: FastifyBaseLogger,
    retentionDays = DEFAULT_AUDIT_RETENTION_DAYS,
    now: () => number = Date.now,
  ) {
    this.#store = store;
    this.#log = log;
    this.#retentionMs = retentionDays * DAY_MS;
    this.#now = now;
  }

  /** Starts the hourly pruning (the first at once). */
  start(): void {
    void this.prune();
    this.#pruner = setInterval(() => void this.prune(), PRUNE_EVERY_MS);
    this.#pruner.unref();
  }

  record(entry: AuditEntry): void {
    this.#pending.push(entry);
    if (this.#pending.length > MAX_PENDING) {
      const dropped = this.#pending.splice(0, this.#pending.length - MAX_PENDING);
      this.#log.error(
        { dropped: dropped.length },
        'the audit trail could not be written; dropped its oldest entries',
      );
    }
    if (this.#timer === undefined && !this.#closed) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        void this.flush();
      }, FLUSH_MS);
    }
  }

  /** Writes what is pending (after any write under way); resolves once it is in the store. */
  flush(): Promise<void> {
    this.#writing = this.#writing.then(async () => {
      if (this.#pending.length === 0) return;
      const batch = this.#pending;
      this.#pending = [];
      try {
        await this.#store.appendAudit(batch);
      } catch (error) {
        // Kept for the next flush, ahead of the newer entries.
        this.#pending = [...batch, ...this.#pending];
        this.#log.warn({ err: error, entries: batch.length }, 'could not write the audit trail; will retry');
        if (!this.#closed && this.#timer === undefined) {
          this.#timer = setTimeout(() => {
            this.#timer = undefined;
            void this.flush();
          }, 1000);
        }
      }
    });
    return this.#writing;
  }

  /** Deletes the entries past the retention; answers how many. */
  async prune(): Promise<number> {
    try {
      const deleted = await this.#store.pruneAudit(this.#now() - this.#retentionMs);
      if (deleted > 0) this.#log.info({ deleted }, 'pruned the audit trail');
      return deleted;
    } catch (error) {
      this.#log.warn({ err: error }, 'could not prune the audit trail');
      return 0;
    }
  }

  /** Stops the timers and writes what is pending. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    clearInterval(this.#pruner);
    await this.flush();
  }
}

/** The route as OpenAPI writes it: `/stacks/:stack_small_id/usage` → `/stacks/{stack_small_id}/usage`. */
export function openApiRoute(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

/** What the audit keeps of an answer: its problem's code, or the transaction's digest and net gas. */
export function answerFacts(
  payload: unknown,
  contentType: unknown,
): { problem_code: string | null; tx_digest: string | null; gas_used: string | null } {
  const facts = { problem_code: null, tx_digest: null, gas_used: null } as {
    problem_code: string | null;
    tx_digest: string | null;
    gas_used: string | null;
  };
  const text =
    typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : undefined;
  if (text === undefined || text.length > 1_000_000) return facts;
  const problem = typeof contentType === 'string' && contentType.startsWith('application/problem+json');
  if (!problem && !text.includes('"tx_digest"')) return facts;
  try {
    const body = JSON.parse(text) as Record<string, unknown>;
    if (problem) {
      facts.problem_code = typeof body.code === 'string' ? body.code : null;
      return facts;
    }
    if (typeof body.tx_digest === 'string') facts.tx_digest = body.tx_digest;
    const gas = body.gas_used as Record<string, unknown> | undefined;
    if (gas && typeof gas === 'object') {
      const n = (v: unknown) => (typeof v === 'number' || typeof v === 'string' ? BigInt(v) : 0n);
      facts.gas_used = String(n(gas.computation_cost) + n(gas.storage_cost) - n(gas.storage_rebate));
    }
  } catch {
    // Not JSON after all: nothing to keep.
  }
  return facts;
}
