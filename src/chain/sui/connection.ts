import { ObjectError } from '@mysten/sui/client';
import { RpcError, type SuiGrpcClient } from '@mysten/sui/grpc';
import type { Logger } from 'pino';
import { backoffDelay } from '../../internal/backoff.ts';
import { FailureLog } from '../../internal/failure-log.ts';
import { ChainUnavailableError, markLogged } from '../chain.ts';
import { BAD_PORT, describeFailure, notGrpcAnswer, notSentCode } from './transport.ts';

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
  /** Which setting gave the URL (`--sui-url`, config.toml's http_rpc_node_addr, ...), for messages. */
  urlSource?: string | undefined;
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
  const named = target.urlSource === undefined ? url : `${url} (${target.urlSource})`;
  const unreachable = (error: unknown) => {
    if (notSentCode(error) === BAD_PORT) {
      return new SuiConfigError(
        `cannot use the Sui fullnode URL ${url}: fetch refuses to connect to port ${new URL(url).port} (a blocked port); give the fullnode's own port`,
      );
    }
    // A JSON-RPC-only URL (config.toml's http_rpc_node_addr may be one): no retry mends it.
    const answer = notGrpcAnswer(error);
    if (answer !== undefined) {
      return new SuiConfigError(
        `the Sui fullnode URL ${named} answers, but not with gRPC (${answer}): this daemon reads sui.rpc.v2 over gRPC-web, which a JSON-RPC-only URL does not serve; set --sui-url to a fullnode URL that serves both, as Mysten's public fullnodes do (https://fullnode.testnet.sui.io:443)`,
      );
    }
    if (error instanceof RpcError && error.code === 'UNIMPLEMENTED') {
      return new SuiConfigError(
        `the Sui fullnode at ${named} does not serve sui.rpc.v2 (${error.message}): this daemon reads it over gRPC-web; set --sui-url to a fullnode that serves it, as Mysten's public fullnodes do (https://fullnode.testnet.sui.io:443)`,
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

/**
 * The connection's state: checked once at start, and again on use until a check succeeds. It also says
 * the fullnode's failures in the log, those of every call of the adapter (connection.ts's check, the
 * event pages, epochs, gas coins, simulations, executions): once per reason, and once when it answers
 * again (FailureLog). The errors it said are marked (markLogged) so that their callers stay quiet.
 */
export class FullnodeConnection {
  readonly #check: () => Promise<Connected>;
  readonly #url: string;
  readonly #onConnected: (connected: Connected) => void;
  readonly #failures: FailureLog;
  #connected: Connected | undefined;
  #checking: Promise<Connected> | undefined;
  #attempts = 0;
  #retryAt = 0;
  #problem: ChainUnavailableError | undefined;

  /** onConnected runs once, when a check first succeeds (at start or later). */
  constructor(
    check: () => Promise<Connected>,
    log: Logger,
    url: string,
    onConnected: (connected: Connected) => void,
  ) {
    this.#check = check;
    this.#url = url;
    this.#onConnected = onConnected;
    this.#failures = new FailureLog(log);
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
      const again = new ChainUnavailableError(
        this.#problem.message,
        Math.ceil((this.#retryAt - now) / 1000),
        {
          cause: this.#problem,
        },
      );
      throw markLogged(again);
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

  /**
   * Says a failed call to the fullnode in the log when its reason is new (`reason`: the failure in plain
   * words, without what was being done, so that every kind of call down for the same reason is one line),
   * and marks the error as said.
   */
  failed(
    error: ChainUnavailableError,
    reason: string,
    level: 'warn' | 'error' = 'warn',
  ): ChainUnavailableError {
    this.#failures.failed(
      reason,
      level,
      { url: this.#url },
      `${error.message}; serving the store meanwhile, retrying`,
    );
    return markLogged(error);
  }

  /** A call to the fullnode succeeded: says so once if a failure was said. */
  answered(): void {
    if (this.#failures.failing)
      this.#failures.recovered({ url: this.#url }, 'the Sui fullnode answers again');
  }

  #run(starting = false): Promise<Connected> {
    this.#checking ??= this.#check()
      .then(
        (connected) => {
          this.#connected = connected;
          this.#problem = undefined;
          // "connected to the Sui fullnode" says that it answers.
          this.#failures.clear();
          this.#onConnected(connected);
          return connected;
        },
        (error: unknown) => {
          if (!(error instanceof ChainUnavailableError || error instanceof SuiConfigError)) throw error;
          // At start, a misconfiguration stops the daemon: the caller says it, in one line.
          if (starting && error instanceof SuiConfigError) throw error;
          this.#attempts += 1;
          const wait = backoffDelay(this.#attempts);
          this.#retryAt = Date.now() + wait;
          const problem =
            error instanceof ChainUnavailableError
              ? error
              : new ChainUnavailableError(error.message, Math.ceil(wait / 1000), { cause: error });
          const reason =
            error instanceof ChainUnavailableError && error.cause !== undefined
              ? describeFailure(error.cause)
              : error.message;
          this.failed(problem, reason, error instanceof SuiConfigError ? 'error' : 'warn');
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
