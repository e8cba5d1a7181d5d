import { ObjectError } from '@mysten/sui/client';
import type { SuiGrpcClient } from '@mysten/sui/grpc';
import type { Logger } from 'pino';
import { backoffDelay } from '../../internal/backoff.ts';
import { ChainUnavailableError } from '../chain.ts';
import { BAD_PORT, describeFailure, notSentCode } from './transport.ts';

/**
 * The adapter's connection to the fullnode: the check that it answers, and that the AtomaDb object is the
 * one the settings name (contracts.md §1.1). It runs once at start; when the fullnode does not answer, the
 * adapter opens anyway and the check runs again on use, until it succeeds. Meanwhile every call fails with
 * ChainUnavailableError naming the fullnode, and problem() says why for /ready.
 *
 * Retries are paced: the event source's reads check every time (the indexer calling them backs off, with
 * backoffDelay), and any other call checks only once the same back-off has passed since the last failed
 * check, failing at once before that. A misconfiguration the fullnode reveals later (the AtomaDb object
 * does not exist there) is reported the same way: the daemon keeps serving its store.
 */

/** A start-up problem (options, keystore, the AtomaDb object), in one line. */
export class SuiConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SuiConfigError';
  }
}

/** What the check learns: the chain, and the AtomaDb object as the fullnode holds it. */
export interface Connected {
  /** The chain's name and id, for the log. */
  chain: string;
  initialSharedVersion: string;
  /** The package that defines the db module's types (the first version, when the package was upgraded). */
  typePackage: string;
  dbJson: Record<string, unknown>;
}

export interface CheckTarget {
  url: string;
  atomaDbId: string;
  configuredVersion: bigint | undefined;
  timeoutMs: number;
}

/**
 * Asks the fullnode for its chain and for the AtomaDb object. Throws SuiConfigError (one line) when the
 * fullnode answers that the object is not what the settings say, or when the URL can never be used;
 * ChainUnavailableError when the fullnode does not answer.
 */
export async function checkFullnode(client: SuiGrpcClient, target: CheckTarget): Promise<Connected> {
  const { url, atomaDbId, configuredVersion, timeoutMs } = target;
  const unreachable = (error: unknown) => {
    if (notSentCode(error) === BAD_PORT) {
      return new SuiConfigError(
        `cannot use the Sui fullnode URL ${url}: fetch refuses to connect to port ${new URL(url).port} (a blocked port); give the fullnode's own port`,
      );
    }
    return new ChainUnavailableError(
      `cannot reach the Sui fullnode at ${url}: ${describeFailure(error, timeoutMs)}`,
      5,
      { cause: error },
    );
  };
  let chain: string;
  try {
    const { response } = await client.ledgerService.getServiceInfo(
      {},
      { abort: AbortSignal.timeout(timeoutMs) },
    );
    chain = `${response.chain ?? 'unnamed chain'} (${response.chainId ?? 'unknown id'})`;
  } catch (error) {
    throw unreachable(error);
  }
  let db: Awaited<ReturnType<typeof client.getObjects<{ json: true }>>>['objects'][number] | undefined;
  try {
    [db] = (
      await client.getObjects({
        objectIds: [atomaDbId],
        include: { json: true },
        signal: AbortSignal.timeout(timeoutMs),
      })
    ).objects;
  } catch (error) {
    throw unreachable(error);
  }
  if (!db || db instanceof Error) {
    if (db instanceof ObjectError && db.reason === 'notFound') {
      throw new SuiConfigError(
        `AtomaDb object ${atomaDbId} does not exist on the fullnode at ${url} (check the id and the network)`,
      );
    }
    throw unreachable(db ?? new Error('no answer for the AtomaDb object'));
  }
  const type = /^(0x[0-9a-f]{64})::db::AtomaDb$/.exec(db.type);
  if (!type)
    throw new SuiConfigError(`object ${atomaDbId} is a ${db.type || 'package'}, not an Atoma db::AtomaDb`);
  if (db.owner.$kind !== 'Shared') {
    throw new SuiConfigError(
      `object ${atomaDbId} is not a shared object (owner: ${db.owner.$kind}): it is not the AtomaDb`,
    );
  }
  const initialSharedVersion = db.owner.Shared.initialSharedVersion;
  if (configuredVersion !== undefined && configuredVersion !== BigInt(initialSharedVersion)) {
    throw new SuiConfigError(
      `AtomaDb initial shared version is configured as ${configuredVersion}, but the object's is ${initialSharedVersion}`,
    );
  }
  return { chain, initialSharedVersion, typePackage: type[1]!, dbJson: db.json ?? {} };
}

/** The connection's state: checked once at start, and again on use until a check succeeds. */
export class FullnodeConnection {
  readonly #check: () => Promise<Connected>;
  readonly #log: Logger;
  readonly #onConnected: (connected: Connected) => void;
  #connected: Connected | undefined;
  #checking: Promise<Connected> | undefined;
  #failures = 0;
  #retryAt = 0;
  #problem: ChainUnavailableError | undefined;

  /** onConnected runs once, when a check first succeeds (at start or later). */
  constructor(check: () => Promise<Connected>, log: Logger, onConnected: (connected: Connected) => void) {
    this.#check = check;
    this.#log = log;
    this.#onConnected = onConnected;
  }

  /**
   * The first check. Resolves once connected, or once the fullnode was found not to answer (then the
   * adapter opens without it); a SuiConfigError (the fullnode says the settings are wrong) stops the start.
   */
  async start(): Promise<void> {
    try {
      await this.#run(true);
    } catch (error) {
      if (!(error instanceof ChainUnavailableError)) throw error;
    }
  }

  /**
   * The connection, checking it first when no check has succeeded yet. `force` checks even within the
   * back-off (for callers that back off themselves). Throws ChainUnavailableError naming the problem.
   */
  async get(force = false): Promise<Connected> {
    if (this.#connected) return this.#connected;
    const now = Date.now();
    if (!force && !this.#checking && this.#problem && now < this.#retryAt) {
      throw new ChainUnavailableError(this.#problem.message, Math.ceil((this.#retryAt - now) / 1000), {
        cause: this.#problem,
      });
    }
    try {
      return await this.#run();
    } catch (error) {
      // A misconfiguration found now is a reason the chain cannot be used, not a start-up failure.
      if (error instanceof SuiConfigError && this.#problem) throw this.#problem;
      throw error;
    }
  }

  /** Why the chain cannot be used now (the last failed check), or undefined once connected. */
  problem(): string | undefined {
    return this.#connected ? undefined : this.#problem?.message;
  }

  #run(starting = false): Promise<Connected> {
    this.#checking ??= this.#check()
      .then(
        (connected) => {
          this.#connected = connected;
          this.#problem = undefined;
          this.#onConnected(connected);
          return connected;
        },
        (error: unknown) => {
          if (!(error instanceof ChainUnavailableError || error instanceof SuiConfigError)) throw error;
          // At start, a misconfiguration stops the daemon: the caller says it, in one line.
          if (starting && error instanceof SuiConfigError) throw error;
          this.#failures += 1;
          const wait = backoffDelay(this.#failures);
          this.#retryAt = Date.now() + wait;
          const problem =
            error instanceof ChainUnavailableError
              ? error
              : new ChainUnavailableError(error.message, Math.ceil(wait / 1000), { cause: error });
          // Said once per problem: the indexer logs each of its own retries.
          if (problem.message !== this.#problem?.message) {
            const level = error instanceof SuiConfigError ? 'error' : 'warn';
            this.#log[level](
              { retryInMs: wait },
              `${problem.message}; serving the store meanwhile, retrying`,
            );
          }
          this.#problem = problem;
          throw error;
        },
      )
      .finally(() => {
        this.#checking = undefined;
      });
    return this.#checking;
  }
}
