import type { Badge, Chain, GasOptions, GasUsed, Operation, Submission } from '../chain/chain.ts';
import { Listeners } from '../internal/listeners.ts';
import type { Mutex } from '../internal/mutex.ts';
import { compareU64, normalizeU64, parseU64, toU64, type U64, u64ToString } from '../internal/u64.ts';
import { ProblemError, refuse } from '../problems/catalog.ts';
import { DEFAULT_PARAMETERS, REPUTATION_SCORE_START, SecurityLevel } from '../protocol/constants.ts';
import { decodePayload, type Payload, readEnvelope } from '../protocol/events.ts';
import { knownFee } from '../protocol/fees.ts';
import { commitmentFor, EMPTY_HASH, expectedAttesters, leafFor, MAX_LEAF_SLOT } from '../protocol/proofs.ts';
import type { Stack } from '../schemas/model.ts';
import type {
  ClaimFundsRequest,
  ClaimResult,
  ModelSubscribeRequest,
  MultiTxResult,
  NotClaimable,
  RegisterResult,
  SettleEstimate,
  StackResult,
  SubmitAttestationsRequest,
  TaskSubscribeRequest,
  TaskUnsubscribeRequest,
  TrySettleRequest,
  TxResult,
  UsageResult,
} from '../schemas/writes.ts';
import type { Store } from '../store/store.ts';
import { problemFromError } from './from-error.ts';
import { estimateSettlements } from './settle-estimate.ts';
import type { Submitter } from './submit.ts';
import { recordUsage } from './usage-reports.ts';
import {
  allFailed,
  type Failure,
  failure,
  nothingToDo,
  ordered,
  type Planned,
  skip,
} from './write-results.ts';

/**
 * The write operations: each validates everything it can against the indexed state before anything is
 * signed (a refusal is a 400/404/409 and nothing is submitted), then submits under the signer's lock,
 * and returns once the transaction is final and, within a bounded wait, its events are indexed.
 */

export interface WritesDeps {
  chain: Chain;
  store: Store;
  submitter: Submitter;
  lock: Mutex;
  /** Where usage comes from besides the reports (--usage-source): set, reports are refused. */
  usageSource?: 'atoma-state' | undefined;
}

export class Writes {
  readonly #chain: Chain;
  readonly #store: Store;
  readonly #submitter: Submitter;
  readonly #lock: Mutex;
  readonly #usage = new Listeners();
  readonly #badgesRead = new Listeners();
  readonly #usageSource: WritesDeps['usageSource'];
  #badges: Badge[] | undefined;

  constructor(deps: WritesDeps) {
    this.#chain = deps.chain;
    this.#store = deps.store;
    this.#submitter = deps.submitter;
    this.#lock = deps.lock;
    this.#usageSource = deps.usageSource;
  }

  /** Calls back after each recorded usage report (the autopilot settles stacks as they fill). */
  onUsage(listener: () => void): () => void {
    return this.#usage.on(listener);
  }

  get signerAddress(): string {
    return this.#chain.signerAddress;
  }

  /**
   * Runs one write's validation, submission and wait: one at a time in this process, and one at a time
   * among the daemons that share the store and sign with this address (their gas coins and checks would
   * otherwise race).
   */
  #serialized<T>(fn: () => Promise<T>): Promise<T> {
    return this.#lock.run(() =>
      this.#store.withLock(`signer:${this.#chain.signerAddress}`, () => {
        // A daemon sharing the store may have moved the gas coins and badges since this one last signed.
        if (this.#store.engine === 'postgres') this.#chain.forgetCachedObjects?.();
        return fn();
      }),
    );
  }

  /** The signer's badges, cached; refreshed after a registration and when a lookup misses. */
  async badges(refresh = false): Promise<Badge[]> {
    if (refresh || this.#badges === undefined) {
      try {
        this.#badges = (await this.#chain.listBadges()).sort((a, b) =>
          compareU64(a.node_small_id, b.node_small_id),
        );
      } catch (error) {
        throw problemFromError(error) ?? error;
      }
      this.#badgesRead.emit();
    }
    return this.#badges;
  }

  /** Calls back each time the signer's badges were read from the chain (at first, after a registration). */
  onBadges(listener: () => void): () => void {
    return this.#badgesRead.on(listener);
  }

  /** The badge a request acts with: the one it names, else the signer's first (lowest small id). */
  async #badge(badgeId: string | undefined): Promise<Badge> {
    return (await this.#actingBadges(badgeId))[0]!;
  }

  /**
   * The badges a request may act with: the one it names (refused when the signer does not own it), else
   * all the signer's badges (refused when it owns none). A miss refreshes the cached list once.
   */
  async #actingBadges(badgeId: string | undefined): Promise<Badge[]> {
    const find = (badges: Badge[]) =>
      badgeId === undefined ? badges : badges.filter((b) => b.badge_id === normalizeId(badgeId));
    let found = find(await this.badges());
    if (found.length === 0) found = find(await this.badges(true));
    if (found.length > 0) return found;
    if (badgeId !== undefined) {
      throw refuse(
        'badge_not_found',
        `the signer ${this.#chain.signerAddress} does not own the NodeBadge ${badgeId}`,
        {
          parameter: 'node_badge_id',
        },
      );
    }
    throw refuse(
      'no_badge',
      `the signer ${this.#chain.signerAddress} owns no NodeBadge; register first with POST /nodes/register`,
    );
  }

  /** Submits one operation and waits for its events to be indexed; a Move abort becomes a 422 problem. */
  async #submit(
    operation: Operation,
    gas: GasOptions,
    what: string,
    meter?: GasMeter,
  ): Promise<{ submission: Submission; indexed: boolean }> {
    try {
      const { result, indexed } = await this.#submitter.run(
        what,
        () => this.#chain.submit(operation, gas),
        (submission) => [submission],
      );
      meter?.(netGas(result.gas_used));
      return { submission: result, indexed };
    } catch (error) {
      // A transaction that executed and aborted was paid for too.
      const used = error instanceof ProblemError ? error.extensions.gas_used : undefined;
      if (meter && used) meter(netGas(used as GasUsed));
      throw error;
    }
  }

  #one({ submission, indexed }: { submission: Submission; indexed: boolean }): TxResult {
    return { tx_digest: submission.digest, status: 'success', gas_used: submission.gas_used, indexed };
  }

  /**
   * A write of one transaction by the badge the request names (else the signer's first): under the
   * signer's lock, `plan` checks the request against the indexed state and builds the call, which is
   * then submitted as `what`.
   */
  #withBadge(
    input: GasOptions & { node_badge_id?: string | undefined },
    what: string,
    plan: (badge: Badge) => Promise<Operation> | Operation,
  ): Promise<TxResult> {
    return this.#serialized(async () => {
      const operation = await plan(await this.#badge(input.node_badge_id));
      return this.#one(await this.#submit(operation, input, what));
    });
  }

  register(gas: GasOptions): Promise<RegisterResult> {
    return this.#serialized(async () => {
      const result = await this.#submit({ kind: 'register_node' }, gas, 'register_node_entry');
      await this.badges(true);
      const registered = result.submission.events
        .map(
          (e) =>
            e as { type?: string; parsedJson?: { badge_id?: string; node_small_id?: { inner?: string } } },
        )
        .find((e) => e.type?.endsWith('::db::NodeRegisteredEvent'));
      return {
        ...this.#one(result),
        node_small_id: toU64(registered?.parsedJson?.node_small_id?.inner) ?? null,
        badge_id: registered?.parsedJson?.badge_id ?? null,
      };
    });
  }

  modelSubscribe(input: ModelSubscribeRequest): Promise<TxResult> {
    return this.#withBadge(input, 'add_node_to_model', (badge) => {
      if (!/^[\x20-\x7e]+$/.test(input.model_name)) {
        throw refuse('invalid_body', 'model_name must be printable ASCII (a Move ascii::String)', {
          parameter: 'model_name',
        });
      }
      return {
        kind: 'add_node_to_model',
        badge,
        model_name: input.model_name,
        echelon_id: input.echelon_id,
      };
    });
  }

  taskSubscribe(input: TaskSubscribeRequest): Promise<TxResult> {
    return this.#withBadge(input, 'subscribe_node_to_task', async (badge) => {
      const task = await this.#activeTask(input.task_small_id, 'subscribe to');
      const min = task.minimum_reputation_score ?? 0;
      if (min > REPUTATION_SCORE_START) {
        throw refuse(
          'requirements_not_met',
          `task ${input.task_small_id} requires a reputation of ${min}; every node has ${REPUTATION_SCORE_START} on this contract`,
          { parameter: 'task_small_id' },
        );
      }
      if (await this.#store.getSubscription(badge.node_small_id, input.task_small_id)) {
        throw refuse(
          'already_subscribed',
          `node ${badge.node_small_id} is already subscribed to task ${input.task_small_id}; change its price with POST /nodes/task-update-subscription`,
          { parameter: 'task_small_id' },
        );
      }
      positive(input.price_per_one_million_compute_units, 'price_per_one_million_compute_units');
      return {
        kind: 'subscribe_node_to_task',
        badge,
        task_small_id: input.task_small_id,
        price_per_one_million_compute_units: input.price_per_one_million_compute_units,
      };
    });
  }

  updateSubscription(input: TaskSubscribeRequest): Promise<TxResult> {
    return this.#withBadge(input, 'update_node_subscription', async (badge) => {
      positive(input.price_per_one_million_compute_units, 'price_per_one_million_compute_units');
      await this.#activeTask(input.task_small_id, 'change the price of');
      await this.#subscribed(badge, input.task_small_id);
      return {
        kind: 'update_node_subscription',
        badge,
        task_small_id: input.task_small_id,
        price_per_one_million_compute_units: input.price_per_one_million_compute_units,
      };
    });
  }

  unsubscribe(input: TaskUnsubscribeRequest): Promise<TxResult> {
    return this.#withBadge(input, 'unsubscribe_node_from_task', async (badge) => {
      await this.#activeTask(input.task_small_id, 'unsubscribe from');
      await this.#subscribed(badge, input.task_small_id);
      return { kind: 'unsubscribe_node_from_task', badge, task_small_id: input.task_small_id };
    });
  }

  /**
   * Try-settles each listed stack that can be settled, each in its own transaction (the contract takes
   * one stack per call); the others are answered with the reason, and nothing is signed for them.
   * Claimed units default to the recorded usage, and a stack with none is refused unless the request
   * names its units (settling claims 0 and gives the pay up). The proof and leaf come from the stack's
   * running request hash. 200 when at least one settled; a problem carrying every stack's reason when
   * none could be.
   */
  trySettle(input: TrySettleRequest, meter?: GasMeter): Promise<MultiTxResult> {
    return this.#serialized(async () => {
      const { planned, skips } = await this.#planSettlements(input);
      if (planned.length === 0) throw nothingToDo('nothing_to_settle', 'settled', skips);
      return this.#perStack(input.stack_small_ids, planned, skips, input, 'try_settle_stack', meter);
    });
  }

  /**
   * What settling the listed stacks would do, with nothing signed (POST /nodes/try-settle-stacks/estimate):
   * the same checks as trySettle, then for each stack it would settle the units it claims, the node fee and
   * the buyer's refund at the claim (by the contract's formula), and the gas of its transaction as the
   * chain simulates it (null when the chain cannot simulate now), or the abort the chain would meet.
   */
  async estimateSettle(input: TrySettleRequest): Promise<SettleEstimate> {
    const { planned, skips } = await this.#planSettlements(input);
    return estimateSettlements(
      { store: this.#store, chain: this.#chain },
      input.stack_small_ids,
      planned,
      skips,
    );
  }

  /** trySettle's checks and calls: the stacks it would settle, and why it would skip the others. */
  async #planSettlements(input: TrySettleRequest): Promise<{ planned: Planned[]; skips: StackResult[] }> {
    const badges = await this.#actingBadges(input.node_badge_id);
    const k = Number((await this.#chain.parameters()).cross_validation_extra_nodes_count);
    const byStack = new Map(
      Object.entries(input.num_claimed_compute_units_by_stack ?? {}).map(([key, units]) => [
        parseU64(key),
        units,
      ]),
    );
    for (const id of byStack.keys()) {
      if (id === undefined || !input.stack_small_ids.some((listed) => listed === id)) {
        throw refuse(
          'invalid_body',
          `num_claimed_compute_units_by_stack names stack ${id}, which is not in stack_small_ids`,
          { parameter: 'num_claimed_compute_units_by_stack' },
        );
      }
    }
    const planned: Planned[] = [];
    const skips = await this.#planOwnStacks(input.stack_small_ids, badges, async (id, stack, badge) => {
      if (stack.in_settle_period || (await this.#store.getTicket(id))) {
        return skip(
          id,
          'already_settled',
          `stack ${id} was already try-settled; try-settle is once per stack`,
        );
      }
      if (stack.is_claimed) return skip(id, 'already_settled', `stack ${id} was already claimed`);
      const explicit = byStack.get(id) ?? input.num_claimed_compute_units;
      if (explicit === undefined && stack.already_computed_units === 0) {
        return skip(
          id,
          'no_usage',
          `stack ${id} has no recorded usage: settling it would claim 0 compute units and give its pay up; report usage first (POST /stacks/${id}/usage) or name the units to claim (num_claimed_compute_units)`,
        );
      }
      const claimed = explicit ?? stack.already_computed_units;
      if (claimed > stack.num_compute_units) {
        return skip(
          id,
          'invalid_body',
          `stack ${id} has ${stack.num_compute_units} compute units; ${claimed} cannot be claimed`,
        );
      }
      const total = (await this.#store.getStackHash(id))?.total_hash ?? EMPTY_HASH;
      const filled = await this.#attesterSlotsFilled(stack, k);
      if (filled > MAX_LEAF_SLOT) throw slotsUnsupported(k, filled, `settle stack ${id}`);
      planned.push({
        stack_small_id: id,
        num_claimed_compute_units: claimed,
        operation: {
          kind: 'try_settle_stack',
          badge,
          stack_small_id: id,
          num_claimed_compute_units: claimed,
          committed_stack_proof: commitmentFor(total, k, filled),
          stack_merkle_leaf: leafFor(total, 0),
        },
      });
      return undefined;
    });
    return { planned, skips };
  }

  /**
   * How many of the k attester slots of the stack's ticket will hold a leaf if the chain samples
   * attesters: the commitment covers those and leaves the others zero, as the chain will (docs/WRITES.md,
   * "Claimed units and proofs"). Only SamplingConsensus tasks sample, drawing among the task's eligible
   * subscribers (contracts.md §2.6): all of them when fewer than k. Counted from the indexed
   * subscriptions, so a node disabled since (no event says so) is still counted. Other levels: k, as
   * nothing ever checks their proof.
   */
  async #attesterSlotsFilled(stack: Stack, k: number): Promise<number> {
    const task = await this.#store.getTask(stack.task_small_id);
    if (task?.security_level !== SecurityLevel.SamplingConsensus) return k;
    const eligible = await this.#store.countEligibleSubscribers(
      stack.task_small_id,
      stack.price_per_one_million_compute_units,
      stack.num_compute_units,
    );
    return expectedAttesters(k, eligible);
  }

  /**
   * Attests each listed stack this node was asked to attest, with the proof and its own slot's leaf
   * built from its record of the stack's requests. Stacks it was not asked to attest, or has no record
   * of, get a per-stack error and no transaction.
   */
  submitAttestations(input: SubmitAttestationsRequest, meter?: GasMeter): Promise<MultiTxResult> {
    return this.#serialized(async () => {
      let badges = await this.#actingBadges(undefined);
      if (input.node_small_id !== undefined) {
        badges = badges.filter((b) => compareU64(b.node_small_id, input.node_small_id!) === 0);
        if (badges.length === 0) {
          throw refuse('badge_not_found', `the signer owns no NodeBadge of node ${input.node_small_id}`, {
            parameter: 'node_small_id',
          });
        }
      }
      const k = Number((await this.#chain.parameters()).cross_validation_extra_nodes_count);
      const planned: { stack_small_id: U64; operation: Operation }[] = [];
      const skipped: StackResult[] = [];
      const skip = (id: U64, code: string, detail: string) =>
        skipped.push({ stack_small_id: id, status: 'skipped', error: { code, detail } });
      for (const id of input.stack_small_ids) {
        const ticket = await this.#chain.getTicket(id);
        if (!ticket) {
          skip(
            id,
            'not_settled',
            `stack ${id} has no settlement ticket (never try-settled, or already claimed)`,
          );
          continue;
        }
        const slots = ticket.requested_attestation_nodes.map(u64ToString);
        const badge = badges.find((b) => slots.includes(u64ToString(b.node_small_id)));
        if (!badge) {
          skip(
            id,
            'not_requested',
            `node ${badges.map((b) => b.node_small_id).join(', ')} was not asked to attest stack ${id}`,
          );
          continue;
        }
        if (ticket.already_attested_nodes.some((n) => compareU64(n, badge.node_small_id) === 0)) {
          skip(id, 'already_attested', `node ${badge.node_small_id} already attested stack ${id}`);
          continue;
        }
        const record = await this.#store.getStackHash(id);
        if (!record) {
          skip(
            id,
            'no_record',
            `this daemon has no record of stack ${id}'s requests to attest from; re-run them first`,
          );
          continue;
        }
        const index = slots.indexOf(u64ToString(badge.node_small_id));
        const last = Math.max(index + 1, slots.length);
        if (last > MAX_LEAF_SLOT) throw slotsUnsupported(k, last, `attest stack ${id}`);
        planned.push({
          stack_small_id: id,
          operation: {
            kind: 'submit_stack_settlement_attestation',
            badge,
            stack_small_id: id,
            // The settler committed over the slots the sampling would fill: as many as it listed.
            committed_stack_proof: commitmentFor(record.total_hash, k, slots.length),
            stack_merkle_leaf: leafFor(record.total_hash, index + 1),
          },
        });
      }
      if (planned.length === 0) {
        throw refuse('nothing_to_attest', 'none of the listed stacks can be attested by this node', {
          extensions: { results: skipped },
        });
      }
      return this.#perStack(
        input.stack_small_ids,
        planned,
        skipped,
        input,
        'submit_stack_settlement_attestation',
        meter,
      );
    });
  }

  /**
   * Claims the funds of the listed stacks that can be claimed now: settled stacks through claim_funds
   * (one atomic call per badge), confidential-compute stacks without a ticket through
   * claim_funds_for_stacks with their recorded usage. The others are answered with the reason (and, in
   * the dispute window, the epoch from which they will be claimable); nothing is signed for them. Each
   * claimed stack says the node's fee and the buyer's refund; so does the total. 200 when at least one
   * claim went through; a problem carrying every stack's reason when none did.
   */
  claimFunds(input: ClaimFundsRequest, meter?: GasMeter): Promise<ClaimResult> {
    return this.#serialized(async () => {
      const badges = await this.#actingBadges(input.node_badge_id);
      const epoch = await this.#chain.currentEpoch();
      const settled: { badge: Badge; id: U64 }[] = [];
      const direct: { badge: Badge; id: U64; units: U64 }[] = [];
      const notClaimable: NotClaimable[] = [];
      const notNow = (id: U64, reason: NotClaimable['reason'], detail: string, from?: U64) => {
        notClaimable.push({
          stack_small_id: id,
          reason,
          detail,
          ...(from === undefined ? {} : { claimable_from_epoch: from }),
        });
        return skip(id, reason, detail);
      };
      const skips = await this.#planOwnStacks(input.stack_small_ids, badges, async (id, stack, badge) => {
        if (stack.is_claimed) return notNow(id, 'already_claimed', `stack ${id} was already claimed`);
        const ticket = await this.#chain.getTicket(id);
        if (!ticket) {
          const task = await this.#store.getTask(stack.task_small_id);
          if (task?.security_level !== SecurityLevel.ConfidentialCompute) {
            return notNow(
              id,
              'not_settled',
              `stack ${id} has not been try-settled; settle it first with POST /nodes/try-settle-stacks`,
            );
          }
          if (stack.already_computed_units === 0) {
            return notNow(
              id,
              'no_usage',
              `stack ${id} has no recorded usage: claiming it now would claim 0 compute units and give its pay up; report usage first (POST /stacks/${id}/usage)`,
            );
          }
          direct.push({ badge, id, units: stack.already_computed_units });
          return undefined;
        }
        if (ticket.is_in_dispute) {
          return notNow(
            id,
            'in_dispute',
            `stack ${id} is in dispute; the contract offers no way to resolve it`,
          );
        }
        if (epoch < ticket.dispute_settled_at_epoch) {
          return notNow(
            id,
            'dispute_period',
            `stack ${id} is in its dispute period; it can be claimed from epoch ${ticket.dispute_settled_at_epoch} (now ${epoch})`,
            ticket.dispute_settled_at_epoch,
          );
        }
        settled.push({ badge, id });
        return undefined;
      });
      if (settled.length === 0 && direct.length === 0) {
        throw nothingToDo('nothing_to_claim', 'claimed', skips, { not_claimable: notClaimable });
      }
      const claims = [
        ...[...groupByBadge(settled)].map(([badge, ids]) => ({
          what: 'claim_funds',
          ids,
          operation: { kind: 'claim_funds', badge, settled_ticket_ids: ids } satisfies Operation,
        })),
        ...[...groupByBadge(direct)].map(([badge, ids]) => ({
          what: 'claim_funds_for_stacks',
          ids,
          operation: {
            kind: 'claim_funds_for_stacks',
            badge,
            stack_small_ids: ids,
            num_compute_units_per_stack_to_claim: ids.map((id) => direct.find((d) => d.id === id)!.units),
          } satisfies Operation,
        })),
      ];
      const { results, done, digests, indexed } = await this.#submitEach(
        input.stack_small_ids,
        skips,
        claims,
        input,
        'claim',
        {
          success: (_claim, submission) => this.#claimedAmounts(submission),
          failure: (claim, failed) =>
            claim.ids.map((id) => ({ stack_small_id: id, status: 'failed', ...failed })),
        },
        meter,
      );
      const sum = (field: 'node_fee_amount' | 'user_refund_amount') =>
        normalizeU64(done.reduce((total, r) => total + BigInt(r[field] ?? 0), 0n));
      return {
        tx_digest: digests[0]!,
        tx_digests: digests,
        status: 'success',
        claimed: done.map((r) => ({
          stack_small_id: r.stack_small_id,
          path: r.path!,
          num_claimed_compute_units: r.num_claimed_compute_units!,
          node_fee_amount: r.node_fee_amount ?? null,
          user_refund_amount: r.user_refund_amount!,
        })),
        not_claimable: notClaimable,
        results,
        total: {
          node_fee_amount: sum('node_fee_amount'),
          user_refund_amount: sum('user_refund_amount'),
          unpriced_stacks: done.filter((r) => r.node_fee_amount === null).length,
        },
        indexed,
      };
    });
  }

  /**
   * Each stack a claim transaction claimed, from its events: the units, the buyer's refund (as the chain
   * paid it) and the node's fee (the contract's formula on the stack's terms; null when never seen).
   */
  async #claimedAmounts(submission: Submission): Promise<StackResult[]> {
    const parameters = (await this.#store.getChainState()).parameters ?? DEFAULT_PARAMETERS;
    const out: StackResult[] = [];
    for (const raw of submission.events) {
      const envelope = readEnvelope(raw);
      if (envelope.name !== 'StackSettlementTicketClaimedEvent' && envelope.name !== 'ClaimedStackEvent')
        continue;
      const { payload } = decodePayload(envelope.name, (raw as { parsedJson?: unknown }).parsedJson) as {
        payload: Payload<'ClaimedStackEvent'>;
      };
      const direct = envelope.name === 'ClaimedStackEvent';
      const terms = await this.#store.getStackTerms(payload.stack_small_id);
      const fee = knownFee(
        parameters,
        direct ? SecurityLevel.ConfidentialCompute : terms?.security_level,
        terms?.price_per_one_million_compute_units,
        payload.num_claimed_compute_units,
      );
      out.push({
        stack_small_id: payload.stack_small_id,
        status: 'success',
        tx_digest: submission.digest,
        path: direct ? 'confidential_compute' : 'settlement_ticket',
        num_claimed_compute_units: payload.num_claimed_compute_units,
        node_fee_amount: fee === null ? null : normalizeU64(fee),
        user_refund_amount: payload.user_refund_amount,
      });
    }
    return out;
  }

  /** Records work the node's inference server served on one of its stacks (off-chain; no transaction). */
  async recordUsage(
    stackSmallId: U64,
    computeUnits: U64,
    requestHash: Uint8Array | undefined,
  ): Promise<UsageResult> {
    const result = await recordUsage(
      { store: this.#store, badges: (refresh) => this.badges(refresh), usageSource: this.#usageSource },
      stackSmallId,
      computeUnits,
      requestHash,
    );
    this.#usage.emit();
    return result;
  }

  /**
   * Goes through the listed stacks in order: a stack not known, or of another node than `badges`', is
   * skipped; `plan` takes each of the others and answers why it is skipped too, or nothing once it planned
   * it. Answers the skipped stacks, in order.
   */
  async #planOwnStacks(
    ids: readonly U64[],
    badges: Badge[],
    plan: (id: U64, stack: Stack, badge: Badge) => Promise<StackResult | undefined>,
  ): Promise<StackResult[]> {
    const skips: StackResult[] = [];
    for (const id of ids) {
      const own = await this.#ownStack(id, badges);
      const skipped = 'status' in own ? own : await plan(id, own.stack, own.badge);
      if (skipped) skips.push(skipped);
    }
    return skips;
  }

  /** The stack and the badge it is assigned to, or the skipped result that says why it is not the node's. */
  async #ownStack(id: U64, badges: Badge[]): Promise<{ stack: Stack; badge: Badge } | StackResult> {
    const stack = await this.#store.getStack(id);
    if (!stack) return skip(id, 'stack_not_found', `no stack ${id} is known to this daemon`);
    const badge = badges.find((b) => b.node_small_id === stack.selected_node_id);
    if (!badge) {
      return skip(
        id,
        'stack_not_ours',
        `stack ${id} is assigned to node ${stack.selected_node_id}, not to this signer's node`,
      );
    }
    return { stack, badge };
  }

  async #activeTask(id: U64, what: string) {
    const task = await this.#store.getTask(id);
    if (!task)
      throw refuse('task_not_found', `no task ${id} is known to this daemon; see GET /tasks`, {
        parameter: 'task_small_id',
      });
    if (task.is_removed || task.is_deprecated) {
      throw refuse(
        'task_inactive',
        `task ${id} is ${task.is_removed ? 'removed' : 'deprecated'}; a node cannot ${what} it`,
        { parameter: 'task_small_id' },
      );
    }
    return task;
  }

  async #subscribed(badge: Badge, taskId: U64): Promise<void> {
    if (!(await this.#store.getSubscription(badge.node_small_id, taskId))) {
      throw refuse('not_subscribed', `node ${badge.node_small_id} is not subscribed to task ${taskId}`, {
        parameter: 'task_small_id',
      });
    }
  }

  /** One transaction per stack, in order; a failure does not stop the others. */
  async #perStack(
    requested: readonly U64[],
    planned: Planned[],
    skips: StackResult[],
    gas: GasOptions,
    what: string,
    meter?: GasMeter,
  ): Promise<MultiTxResult> {
    const extra = (plan: Planned) =>
      plan.num_claimed_compute_units === undefined
        ? {}
        : { num_claimed_compute_units: plan.num_claimed_compute_units };
    const transactions = planned.map((plan) => ({ ...plan, what }));
    const { results, digests, indexed } = await this.#submitEach(
      requested,
      skips,
      transactions,
      gas,
      what,
      {
        success: (plan, submission) => [
          {
            stack_small_id: plan.stack_small_id,
            status: 'success',
            tx_digest: submission.digest,
            ...extra(plan),
          },
        ],
        failure: (plan, failed) => [
          { stack_small_id: plan.stack_small_id, status: 'failed', ...extra(plan), ...failed },
        ],
      },
      meter,
    );
    return { tx_digests: digests, results, indexed };
  }

  /**
   * Submits each transaction in order, a failure not stopping the others, and answers every listed
   * stack's result in the order the request listed them (`skips` among them), with the digests of the
   * transactions that executed; `done` holds the stacks that went through, in the order their
   * transactions ran. When none did, the problem says why (allFailed, with `what` for the writes).
   */
  async #submitEach<T extends { what: string; operation: Operation }>(
    requested: readonly U64[],
    skips: readonly StackResult[],
    transactions: readonly T[],
    gas: GasOptions,
    what: string,
    outcome: {
      /** The results of the stacks a transaction that went through acted on. */
      success: (transaction: T, submission: Submission) => StackResult[] | Promise<StackResult[]>;
      /** The results of the stacks a transaction that failed was for. */
      failure: (transaction: T, failed: Failure) => StackResult[];
    },
    meter?: GasMeter,
  ): Promise<{ results: StackResult[]; done: StackResult[]; digests: string[]; indexed: boolean }> {
    const results: StackResult[] = [...skips];
    const digests: string[] = [];
    let indexed = true;
    for (const transaction of transactions) {
      try {
        const result = await this.#submit(transaction.operation, gas, transaction.what, meter);
        digests.push(result.submission.digest);
        indexed &&= result.indexed;
        results.push(...(await outcome.success(transaction, result.submission)));
      } catch (error) {
        if (!(error instanceof ProblemError)) throw error;
        const failed = failure(error);
        if (failed.tx_digest !== undefined) digests.push(failed.tx_digest);
        results.push(...outcome.failure(transaction, failed));
      }
    }
    const done = results.filter((r) => r.status === 'success');
    ordered(requested, results);
    if (done.length === 0) throw allFailed(results, digests, what);
    return { results, done, digests, indexed };
  }
}

function positive(value: U64, parameter: string): void {
  if (compareU64(value, 0) <= 0)
    throw refuse('invalid_body', `${parameter} must be greater than 0`, { parameter });
}

function normalizeId(id: string): string {
  return `0x${id.slice(2).toLowerCase().padStart(64, '0')}`;
}

function groupByBadge<T extends { badge: Badge; id: U64 }>(items: T[]): Map<Badge, U64[]> {
  const groups = new Map<Badge, U64[]>();
  for (const item of items) groups.set(item.badge, [...(groups.get(item.badge) ?? []), item.id]);
  return groups;
}

/** A proof or leaf that needs a slot a one-byte leaf index cannot name: refused before anything is signed. */
function slotsUnsupported(k: number, slot: number, what: string): ProblemError {
  return refuse(
    'attester_slots_unsupported',
    `cannot ${what}: the chain's cross_validation_extra_nodes_count is ${k}, and its proof needs attester slot ${slot}, above ${MAX_LEAF_SLOT}: a leaf's slot index is one byte (as atoma-node derives it); nothing was signed`,
  );
}

/** Told the gas each transaction of a write used (MIST, net of the storage rebate): the autopilot's daily cap. */
export type GasMeter = (mist: bigint) => void;

/** What a transaction cost the signer: computation and storage less the storage rebate, never below 0. */
export function netGas(gas: GasUsed): bigint {
  const net = BigInt(gas.computation_cost) + BigInt(gas.storage_cost) - BigInt(gas.storage_rebate);
  return net > 0n ? net : 0n;
}
