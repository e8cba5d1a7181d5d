import type { Submission } from '../chain/chain.ts';
import { DevActorError, type DevNetwork } from '../chain/dev/dev-network.ts';
import { compareU64, normalizeU64, type U64, u64ToString } from '../internal/u64.ts';
import { refuse } from '../problems/catalog.ts';
import { EMPTY_HASH, extendHash, syntheticRequestHash } from '../protocol/proofs.ts';
import type {
  BuyStackRequest,
  CreatePeerRequest,
  CreateTaskRequest,
  PeerTrySettleRequest,
  SetGasRequest,
} from '../schemas/dev.ts';
import type { ReadStore, UsageStore } from '../store/store.ts';
import type { Submitter } from './submit.ts';

/**
 * The other actors of the dev network (admin, peer nodes, users), for local use and tests. Each action is
 * a transaction of its own; a Move abort is a 422, like the operator's writes, and each returns once its
 * events are indexed (within the same bounded wait).
 */
export class DevActors {
  readonly #dev: DevNetwork;
  readonly #store: ReadStore & UsageStore;
  readonly #submitter: Submitter;

  constructor(deps: { dev: DevNetwork; store: ReadStore & UsageStore; submitter: Submitter }) {
    this.#dev = deps.dev;
    this.#store = deps.store;
    this.#submitter = deps.submitter;
  }

  /** Runs one dev action: refusals and aborts become problems; waits until its events are indexed. */
  async #run<T extends { submission?: Submission; submissions?: Submission[] }>(
    what: string,
    action: () => Promise<T>,
  ): Promise<{ result: T; tx_digests: string[]; indexed: boolean }> {
    const { result, submissions, indexed } = await this.#submitter.run(
      what,
      async () => {
        try {
          return await action();
        } catch (error) {
          if (!(error instanceof DevActorError)) throw error;
          throw refuse(error.code === 'not_found' ? 'not_found' : 'invalid_body', error.message);
        }
      },
      (r) => r.submissions ?? (r.submission ? [r.submission] : []),
    );
    return { result, tx_digests: submissions.map((s) => s.digest), indexed };
  }

  async createTask(input: CreateTaskRequest) {
    const { result, tx_digests, indexed } = await this.#run('create_task_entry', () =>
      this.#dev.createTask({
        role: input.role,
        model_name: input.model_name ?? null,
        security_level: input.security_level,
        minimum_reputation_score: input.minimum_reputation_score ?? null,
        is_public: input.is_public ?? true,
      }),
    );
    return { task_small_id: result.task_small_id!, tx_digest: tx_digests[0]!, indexed };
  }

  async deprecateTask(taskSmallId: U64) {
    const { tx_digests, indexed } = await this.#run('deprecate_task', () =>
      this.#dev.deprecateTask(taskSmallId),
    );
    return { tx_digest: tx_digests[0]!, indexed };
  }

  async removeTask(taskSmallId: U64) {
    const { tx_digests, indexed } = await this.#run('remove_deprecated_task', () =>
      this.#dev.removeTask(taskSmallId),
    );
    return { tx_digest: tx_digests[0]!, indexed };
  }

  async createPeerNode(input: CreatePeerRequest) {
    const { result, tx_digests, indexed } = await this.#run('register_node_entry', () =>
      this.#dev.createPeerNode({ subscriptions: input.subscriptions ?? [] }),
    );
    return { node_small_id: result.node_small_id!, tx_digests, indexed };
  }

  async buyStack(input: BuyStackRequest) {
    const { result, tx_digests, indexed } = await this.#run('acquire_new_stack_entry', () =>
      this.#dev.buyStack(input),
    );
    return {
      stack_small_id: result.stack_small_id!,
      selected_node_id: result.selected_node_id!,
      tx_digest: tx_digests[0]!,
      indexed,
    };
  }

  /**
   * The stack's peer node try-settles it, with a proof over the requests it served (simulated). When the
   * operator's node is asked to attest, this also records that its inference server re-ran those requests,
   * so POST /nodes/submit-attestations can attest honestly.
   */
  async peerTrySettle(stackSmallId: U64, input: PeerTrySettleRequest) {
    const stack = await this.#store.getStack(stackSmallId);
    if (!stack)
      throw refuse('stack_not_found', `no stack ${stackSmallId} is known to this daemon`, {
        parameter: 'stack_small_id',
      });
    const claimed = input.num_claimed_compute_units ?? stack.num_compute_units;
    const total = extendHash(
      EMPTY_HASH,
      syntheticRequestHash(u64ToString(stackSmallId), u64ToString(claimed), 'peer'),
    );
    const { result, tx_digests, indexed } = await this.#run('try_settle_stack', () =>
      this.#dev.peerTrySettle(stackSmallId, { num_claimed_compute_units: claimed, total_hash: total }),
    );
    const requested = result.requested_attestation_nodes ?? [];
    const ours = (await this.#dev.listBadges()).some((b) =>
      requested.some((n) => compareU64(n, b.node_small_id) === 0),
    );
    if (ours) await this.#store.putStackHash(stackSmallId, total, 1);
    return { tx_digest: tx_digests[0]!, requested_attestation_nodes: requested, indexed };
  }

  /** A peer node attests the stack, honestly: it re-ran the requests this daemon recorded for it. */
  async peerAttest(stackSmallId: U64, nodeSmallId: U64) {
    const record = await this.#store.getStackHash(stackSmallId);
    if (!record) {
      throw refuse(
        'stack_not_found',
        `this daemon has no record of stack ${stackSmallId}'s requests for the peer to re-run`,
        {
          parameter: 'stack_small_id',
        },
      );
    }
    const { tx_digests, indexed } = await this.#run('submit_stack_settlement_attestation', () =>
      this.#dev.peerAttest(stackSmallId, nodeSmallId, record.total_hash),
    );
    return { tx_digest: tx_digests[0]!, indexed };
  }

  async peerDispute(stackSmallId: U64, nodeSmallId: U64) {
    const { tx_digests, indexed } = await this.#run('start_attestation_dispute', () =>
      this.#dev.peerDispute(stackSmallId, nodeSmallId),
    );
    return { tx_digest: tx_digests[0]!, indexed };
  }

  async peerClaim(nodeSmallId: U64, stackSmallIds: U64[]) {
    const { tx_digests, indexed } = await this.#run('claim_funds', () =>
      this.#dev.peerClaim(nodeSmallId, stackSmallIds),
    );
    return { tx_digest: tx_digests[0]!, indexed };
  }

  /** Advances the epoch; answers once the indexer has seen it, so earnings read next use it. */
  /** Sets the signer's SUI for gas: a faucet, or a spend elsewhere (no transaction, no event). */
  setGas(input: SetGasRequest) {
    this.#dev.setGasBalance(BigInt(input.balance_mist));
    return { address: this.#dev.signerAddress, balance_mist: normalizeU64(this.#dev.gasBalance()) };
  }

  async advanceEpoch() {
    const epoch = await this.#dev.advanceEpoch();
    const indexed = await this.#submitter.indexedWhen(async () => {
      const state = await this.#store.getChainState();
      return state.epoch !== null && compareU64(state.epoch, epoch) >= 0;
    });
    return { epoch, indexed };
  }
}
