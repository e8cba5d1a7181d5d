import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { U64_MAX } from '../src/internal/u64.ts';
import { abortName, dbErrorCode, dbErrorName, EBASE } from '../src/protocol/aborts.ts';
import { U64ArithmeticError } from '../src/protocol/arithmetic.ts';
import { DEFAULT_PARAMETERS, SecurityLevel } from '../src/protocol/constants.ts';
import { decodePayload } from '../src/protocol/events.ts';
import {
  attesterReward,
  stackFeeAmount,
  stackPaymentAmount,
  stackRefundAmount,
} from '../src/protocol/fees.ts';
import {
  commitmentFor,
  EMPTY_HASH,
  expectedAttesters,
  extendHash,
  hashLeaves,
  leafFor,
  ticketLeaves,
  withAttesterLeaf,
} from '../src/protocol/proofs.ts';
import { addUsage, fillFraction } from '../src/protocol/usage.ts';

const { NoSecurity, ConfidentialCompute, SamplingConsensus } = SecurityLevel;
const params = DEFAULT_PARAMETERS;
const arithmetic = (error: unknown) => error instanceof U64ArithmeticError;

describe('protocol: what a stack costs (contracts.md §4.1)', () => {
  it('charges base = floor(price x units / 1e6), and 1.212x on SamplingConsensus', () => {
    // The setup script's price: 10 USDC per million units (10_000_000 at 6 decimals); 250,000 units.
    assert.equal(stackPaymentAmount(params, NoSecurity, 10_000_000n, 250_000n), 2_500_000n);
    assert.equal(stackPaymentAmount(params, ConfidentialCompute, 10_000_000n, 250_000n), 2_500_000n);
    // floor(2_500_000 x (1200 + 12) / 1000)
    assert.equal(stackPaymentAmount(params, SamplingConsensus, 10_000_000n, 250_000n), 3_030_000n);
    // The dev-network test's numbers: base 25_000, paid floor(25_000 x 1212 / 1000) = 30_300.
    assert.equal(stackPaymentAmount(params, SamplingConsensus, 2_500_000n, 10_000n), 30_300n);
  });

  it('rounds the base down, to nothing for small stacks, before the surcharge', () => {
    assert.equal(stackPaymentAmount(params, NoSecurity, 3n, 100_000n), 0n);
    // base = floor(7 x 999_999 / 1e6) = 6; floor(6 x 1212 / 1000) = 7.
    assert.equal(stackPaymentAmount(params, SamplingConsensus, 7n, 999_999n), 7n);
    const charges = { ...params, sampling_consensus_charge_permille: 1000n };
    assert.equal(stackPaymentAmount(charges, SamplingConsensus, 10_000_000n, 250_000n), 2_530_000n);
  });

  it('aborts on u64 overflow as Move does', () => {
    assert.throws(() => stackPaymentAmount(params, NoSecurity, U64_MAX, 2n), arithmetic);
    // price x units fits; the surcharge multiplication overflows.
    const big = U64_MAX / 1000n;
    assert.throws(() => stackPaymentAmount(params, SamplingConsensus, big, 1_000_000n), arithmetic);
  });
});

describe('protocol: what a claim pays (contracts.md §4.2)', () => {
  it('pays the node fee(claimed) and refunds the buyer fee(bought - claimed), each floored', () => {
    // 1.2x on SamplingConsensus: floor(333_333 x 10_000_000 x 1200 / 1e9) = 3_999_996.
    assert.equal(stackFeeAmount(params, SamplingConsensus, 10_000_000n, 333_333n), 3_999_996n);
    assert.equal(stackFeeAmount(params, NoSecurity, 10_000_000n, 333_333n), 3_333_330n);
    assert.equal(stackRefundAmount(params, SamplingConsensus, 10_000_000n, 1_000_000n, 333_333n), 8_000_004n);
    // The dev-network test's numbers: fee(3333) = 9999 and refund fee(6667) = 20_001 at 2_500_000.
    assert.equal(stackFeeAmount(params, SamplingConsensus, 2_500_000n, 3_333n), 9_999n);
    assert.equal(stackRefundAmount(params, SamplingConsensus, 2_500_000n, 10_000n, 3_333n), 20_001n);
    // floor(999_999 x 7 / 1e6) = 6; floor(999_999 x 7 x 1200 / 1e9) = 8.
    assert.equal(stackFeeAmount(params, ConfidentialCompute, 7n, 999_999n), 6n);
    assert.equal(stackFeeAmount(params, SamplingConsensus, 7n, 999_999n), 8n);
  });

  it('keeps the 12 permille surcharge and the rounding dust in the treasury', () => {
    const paid = stackPaymentAmount(params, SamplingConsensus, 10_000_000n, 1_000_000n);
    const node = stackFeeAmount(params, SamplingConsensus, 10_000_000n, 333_333n);
    const refund = stackRefundAmount(params, SamplingConsensus, 10_000_000n, 1_000_000n, 333_333n);
    assert.equal(paid, 12_120_000n);
    assert.equal(paid - node - refund, 120_000n);
  });

  it('credits each attester that attested fee / k, and divides by zero only then', () => {
    assert.equal(attesterReward(params, 3_999_996n), 3_999_996n);
    assert.equal(attesterReward({ cross_validation_extra_nodes_count: 3n }, 100n), 33n);
    assert.throws(() => attesterReward({ cross_validation_extra_nodes_count: 0n }, 100n), arithmetic);
  });

  it('refuses a claim of more units than bought (u64 underflow)', () => {
    assert.throws(() => stackRefundAmount(params, NoSecurity, 1n, 10n, 11n), arithmetic);
  });
});

describe('protocol: proofs and slots (contracts.md §2.6, §2.7)', () => {
  it('commits blake2b-256 over 1 + k slots that the settler and each attester fill alike', () => {
    const total = extendHash(extendHash(EMPTY_HASH, new Uint8Array(32).fill(1)), new Uint8Array(32).fill(2));
    for (const k of [0, 1, 2]) {
      let leaves = ticketLeaves(leafFor(total, 0), k);
      assert.equal(leaves.length, 32 * (1 + k));
      for (let i = 0; i < k; i++) leaves = withAttesterLeaf(leaves, i, leafFor(total, i + 1));
      assert.deepEqual(hashLeaves(leaves), commitmentFor(total, k));
    }
  });

  it('commits over the slots that will be filled: the others stay zero on chain', () => {
    const total = extendHash(EMPTY_HASH, new Uint8Array(32).fill(3));
    // k = 3, two attesters sampled (fewer eligible than k): slot 3 is never written.
    let leaves = ticketLeaves(leafFor(total, 0), 3);
    for (let i = 0; i < 2; i++) leaves = withAttesterLeaf(leaves, i, leafFor(total, i + 1));
    assert.deepEqual(hashLeaves(leaves), commitmentFor(total, 3, 2));
    assert.notDeepEqual(hashLeaves(leaves), commitmentFor(total, 3));
    assert.deepEqual(commitmentFor(total, 2, 5), commitmentFor(total, 2), 'at most k slots');
    assert.equal(expectedAttesters(3, 2), 2);
    assert.equal(expectedAttesters(2, 7), 2);
    assert.equal(expectedAttesters(2, 0), 0);
  });

  it('puts an attester in slot index + 1, growing a vector too short for it', () => {
    const leaf = new Uint8Array(32).fill(9);
    const grown = withAttesterLeaf(ticketLeaves(new Uint8Array(32).fill(1), 0), 1, leaf);
    assert.equal(grown.length, 96);
    assert.deepEqual(grown.subarray(32, 64), new Uint8Array(32));
    assert.deepEqual(grown.subarray(64), leaf);
  });
});

describe('protocol: usage', () => {
  it('adds served units within capacity and extends the running hash', () => {
    const stack = { num_compute_units: 100, already_computed_units: 60, num_total_messages: 3 };
    const hash = new Uint8Array(32).fill(5);
    const first = addUsage(stack, undefined, 40, hash);
    assert.equal(first.status, 'recorded');
    if (first.status !== 'recorded') return;
    assert.equal(first.already_computed_units, 100);
    assert.equal(first.num_total_messages, 4);
    assert.equal(first.record.num_requests, 1);
    assert.deepEqual(first.record.total_hash, extendHash(EMPTY_HASH, hash));
    assert.deepEqual(addUsage(stack, undefined, 41, hash), { status: 'over_capacity' });
    assert.equal(fillFraction({ num_compute_units: 0, already_computed_units: 0 }), 1);
    assert.equal(fillFraction({ num_compute_units: 200, already_computed_units: 50 }), 0.25);
  });

  it('stays exact above 2^53', () => {
    const capacity = 2n ** 60n;
    const change = addUsage(
      { num_compute_units: capacity, already_computed_units: capacity - 1n, num_total_messages: 0 },
      undefined,
      1,
      EMPTY_HASH,
    );
    assert.equal(change.status === 'recorded' && change.already_computed_units, capacity);
  });
});

describe('protocol: abort codes (contracts.md §2.21)', () => {
  it('names every db code and the framework aborts the contract reaches', () => {
    assert.equal(EBASE, 312_012_000);
    assert.equal(dbErrorCode('ENodeNotSelectedForClaim'), 312012054);
    assert.equal(dbErrorName(312012054), 'ENodeNotSelectedForClaim');
    assert.equal(dbErrorName(312012008), undefined);
    assert.equal(abortName('db', 312012017), 'ETaskNotFound');
    assert.equal(abortName('db', 312012008), 'unknown');
    assert.equal(abortName('balance', 2), 'ENotEnough');
    assert.equal(abortName('dynamic_field', 1), 'EFieldDoesNotExist');
    assert.equal(abortName('other', 1), 'unknown');
  });
});

describe('protocol: event payloads', () => {
  const stack = (changes: Record<string, unknown>) => ({
    stack_id: `0x${'ab'.repeat(32)}`,
    stack_small_id: { inner: '7' },
    owner: `0x${'cd'.repeat(32)}`,
    task_small_id: { inner: '2' },
    selected_node_id: { inner: '3' },
    num_compute_units: '1000',
    price_per_one_million_compute_units: '18446744073709551615',
    ...changes,
  });

  it('takes ids as Sui prints them as they are, and normalises the other forms', () => {
    const canonical = decodePayload('StackCreatedEvent', stack({})).payload as Record<string, unknown>;
    assert.equal(canonical.stack_id, `0x${'ab'.repeat(32)}`);
    assert.equal(canonical.price_per_one_million_compute_units, U64_MAX);
    const other = decodePayload(
      'StackCreatedEvent',
      stack({ stack_id: '0xAB', owner: `0x${'CD'.repeat(32)}` }),
    ).payload as Record<string, unknown>;
    assert.equal(other.stack_id, `0x${'0'.repeat(62)}ab`);
    assert.equal(other.owner, `0x${'cd'.repeat(32)}`);
  });

  it('reads small ids in every accepted form, and names the field of a bad one', () => {
    const forms = [{ inner: '7' }, { inner: 7 }, { inner: '9007199254740993' }];
    assert.deepEqual(
      forms.map(
        (id) =>
          (
            decodePayload('StackCreatedEvent', stack({ stack_small_id: id })).payload as {
              stack_small_id: unknown;
            }
          ).stack_small_id,
      ),
      [7, 7, 9007199254740993n],
    );
    for (const [id, message] of [
      [{ inner: '-1' }, /^\$\.parsedJson\.stack_small_id\.inner: expected a u64/],
      [{ inner: '18446744073709551616' }, /^\$\.parsedJson\.stack_small_id\.inner: expected a u64/],
      [['7'], /^\$\.parsedJson\.stack_small_id: expected an object/],
      ['7', /^\$\.parsedJson\.stack_small_id: expected an object/],
      [{ id: '7' }, /^\$\.parsedJson\.stack_small_id\.inner: expected a u64/],
    ] as const) {
      assert.throws(() => decodePayload('StackCreatedEvent', stack({ stack_small_id: id })), { message });
    }
  });
});
