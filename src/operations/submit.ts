import type { Logger } from 'pino';
import type { Submission } from '../chain/chain.ts';
import type { LiveIndexer } from '../indexer/run.ts';
import { createdStackOf, decodeEvent, readEnvelope } from '../protocol/events.ts';
import type { EventLookup } from '../store/store.ts';
import { abortProblem, problemFromError } from './from-error.ts';

/**
 * Submit and wait, for every action that sends transactions (the operator's writes and the dev network's
 * other actors): the chain's errors become problems, a failed transaction is a 422, and the answer comes
 * once the transactions' events are indexed (within a bounded wait), so the next read reflects them.
 */
export class Submitter {
  readonly #indexer: LiveIndexer;
  readonly #indexWaitMs: number;
  readonly #log: Logger;

  constructor(deps: { indexer: LiveIndexer; indexWaitMs: number; log: Logger }) {
    this.#indexer = deps.indexer;
    this.#indexWaitMs = deps.indexWaitMs;
    this.#log = deps.log;
  }

  /**
   * Runs `action`, which submits the transactions that `submissions` lists from its result; `what` names
   * the entry function in messages. Resolves once their events are indexed or the wait is over
   * (`indexed` says which).
   */
  async run<T>(
    what: string,
    action: () => Promise<T>,
    submissions: (result: T) => Submission[],
  ): Promise<{ result: T; submissions: Submission[]; indexed: boolean }> {
    let result: T;
    try {
      result = await action();
    } catch (error) {
      throw problemFromError(error) ?? error;
    }
    const sent = submissions(result);
    for (const { digest, status, abort } of sent) {
      this.#log.info({ operation: what, digest, status, abort }, 'transaction executed');
    }
    const failed = sent.find((s) => s.status === 'failure');
    if (failed) throw abortProblem(failed, what);
    const indexed = await this.#indexer.waitFor(
      sent.flatMap((s) => s.events.map(appliedEvent)),
      this.#indexWaitMs,
    );
    return { result, submissions: sent, indexed };
  }

  /** Waits, within the same bound, until the store shows what an eventless change did (a new epoch). */
  indexedWhen(check: () => Promise<boolean>): Promise<boolean> {
    return this.#indexer.waitUntil(check, this.#indexWaitMs);
  }
}

/** What shows that a transaction's event was applied: its key, and the stack a StackCreatedEvent created. */
function appliedEvent(raw: unknown): EventLookup {
  const decoded = decodeEvent(raw);
  // An event skipped as malformed has no key to wait for: readEnvelope throws, as it did before.
  if (decoded.kind !== 'event') return { key: readEnvelope(raw).key };
  const createdStack = createdStackOf(decoded.event);
  return createdStack === undefined
    ? { key: decoded.envelope.key }
    : { key: decoded.envelope.key, createdStack };
}
