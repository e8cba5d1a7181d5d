import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it, mock } from 'node:test';
import { bcs } from '@mysten/sui/bcs';
import { decodeSuiPrivateKey, parseSerializedSignature } from '@mysten/sui/cryptography';
import { GrpcTypes, SuiGrpcClient } from '@mysten/sui/grpc';
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519';
import { Secp256k1Keypair } from '@mysten/sui/keypairs/secp256k1';
import { Transaction } from '@mysten/sui/transactions';
import { fromBase64, toBase64 } from '@mysten/sui/utils';
import { verifyTransactionSignature } from '@mysten/sui/verify';
import {
  type Badge,
  ChainOutcomeUnknownError,
  ChainRejectedError,
  ChainUnavailableError,
  type Operation,
  type Submission,
} from '../../src/chain/chain.ts';
import { arithmeticAbort } from '../../src/chain/dev/aborts.ts';
import { decodeExecutionError } from '../../src/chain/sui/aborts.ts';
import { DB_EVENT_LAYOUTS, parsedJsonFromBcs } from '../../src/chain/sui/event-bcs.ts';
import { KeystoreError, loadKeystore } from '../../src/chain/sui/keystore.ts';
import {
  DEFAULT_GAS_BUDGET_CAP,
  EVENT_PAGE_SIZE,
  SuiConfigError,
  SuiNetwork,
  type SuiNetworkOptions,
} from '../../src/chain/sui/sui-network.ts';
import { applyPage } from '../../src/indexer/apply.ts';
import { catchUp, LiveIndexer } from '../../src/indexer/run.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { abortProblem } from '../../src/operations/from-error.ts';
import { ERRORS } from '../../src/problems/catalog.ts';
import { dbErrorCode } from '../../src/protocol/aborts.ts';
import { decodePayload, isEventName, readEnvelope } from '../../src/protocol/events.ts';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { captureLogger } from '../helpers/capture-log.ts';
import { tempDir } from '../helpers/tmp.ts';
import {
  ATOMA_DB_INITIAL_SHARED_VERSION,
  FullnodeDouble,
  RANDOM_INITIAL_SHARED_VERSION,
} from './fullnode-double.ts';

/**
 * The Sui adapter (src/chain/sui/) against the loopback fullnode test double (./fullnode-double.ts), which
 * speaks gRPC-web and executes with the dev network's contract rules.
 */

const silent = createLogger('silent');
const MODEL = 'meta-llama/Llama-3.3-70B-Instruct';
const RUST_VECTOR = 'AN0JMHpDum3BhrVwnkylH0/HGRHBQ/fO/8+MYOawO8j6';
const RUST_VECTOR_ADDRESS = '0xa2d14fad60c56049ecf75246a481934691214ce413e6a8ae2fe6834c173a6133';

/** The keystore entry (base64 of flag 0 and the secret) of an Ed25519 key. */
function entryOf(kp: Ed25519Keypair | Secp256k1Keypair, flag = 0): string {
  const secret = decodeSuiPrivateKey(kp.getSecretKey()).secretKey;
  return toBase64(new Uint8Array([flag, ...secret]));
}

function writeKeystore(dir: string, entries: unknown, name = 'sui.keystore'): string {
  const file = join(dir, name);
  writeFileSync(file, typeof entries === 'string' ? entries : JSON.stringify(entries));
  return file;
}

interface World {
  double: FullnodeDouble;
  sui: SuiNetwork;
  kp: Ed25519Keypair;
  dir: string;
  keystore: string;
  options: SuiNetworkOptions;
  close(): Promise<void>;
}

async function world(
  settings: { coins?: bigint[]; cap?: bigint; attestationNodes?: number; samplingProbability?: number } = {},
): Promise<World> {
  const tmp = tempDir('sui-test-');
  const kp = Ed25519Keypair.generate();
  const keystore = writeKeystore(tmp.dir, [entryOf(kp)]);
  const double = await FullnodeDouble.start({
    dataDir: join(tmp.dir, 'chain'),
    signerAddress: kp.toSuiAddress(),
    ...(settings.coins ? { coins: settings.coins } : {}),
    ...(settings.attestationNodes === undefined ? {} : { attestationNodes: settings.attestationNodes }),
    ...(settings.samplingProbability === undefined
      ? {}
      : { samplingProbability: settings.samplingProbability }),
  });
  const options: SuiNetworkOptions = {
    url: double.url,
    packageId: double.packageId,
    atomaDbId: double.atomaDbId,
    atomaDbInitialSharedVersion: undefined,
    keystore,
    address: undefined,
    gasBudgetCap: settings.cap ?? DEFAULT_GAS_BUDGET_CAP,
  };
  let sui: SuiNetwork;
  try {
    sui = await SuiNetwork.open(options, silent);
  } catch (error) {
    await double.close();
    await tmp.remove();
    throw error;
  }
  return {
    double,
    sui,
    kp,
    dir: tmp.dir,
    keystore,
    options,
    async close() {
      await sui.close();
      await double.close();
      await tmp.remove();
    },
  };
}

async function register(w: World): Promise<Badge> {
  const submission = await w.sui.submit({ kind: 'register_node' });
  assert.equal(submission.status, 'success');
  const [badge] = await w.sui.listBadges();
  assert.ok(badge);
  return badge;
}

/** The single MoveCall of transaction bytes: its target and its inputs in argument order. */
function decode(bytes: Uint8Array) {
  const data = Transaction.from(bytes).getData();
  assert.equal(data.commands.length, 1);
  const call = data.commands[0]!.MoveCall!;
  const inputs = call.arguments.map((a) => {
    assert.equal(a.$kind, 'Input');
    return data.inputs[(a as { Input: number }).Input]!;
  });
  return { data, target: `${call.package}::${call.module}::${call.function}`, inputs };
}

type Input = ReturnType<typeof decode>['inputs'][number];
const pure = (i: Input) => fromBase64(i.Pure!.bytes);
const u64 = (i: Input) => bcs.u64().parse(pure(i));
const bytesOf = (i: Input) => Array.from(bcs.byteVector().parse(pure(i)));
const u64s = (i: Input) => bcs.vector(bcs.u64()).parse(pure(i));

function assertShared(i: Input, id: string, version: bigint, mutable: boolean) {
  const shared = i.Object?.SharedObject;
  assert.ok(shared, 'a shared object input');
  assert.equal(shared.objectId, id);
  assert.equal(String(shared.initialSharedVersion), String(version));
  assert.equal(shared.mutable, mutable);
}

function assertBadge(i: Input, badge: Badge) {
  const owned = i.Object?.ImmOrOwnedObject;
  assert.ok(owned, 'the NodeBadge as an owned object ref');
  assert.equal(owned.objectId, badge.badge_id);
}

/** Every event decodes with the indexer's decoder: envelope, and payload for the events it applies. */
function assertDecodes(events: unknown[]) {
  for (const raw of events) {
    const envelope = readEnvelope(raw);
    if (isEventName(envelope.name)) decodePayload(envelope.name, (raw as { parsedJson: unknown }).parsedJson);
  }
}

describe('Sui keystore', () => {
  it('reads the Rust keytool vector and the bech32 form, and picks an address', async () => {
    const tmp = tempDir();
    try {
      const kp = Ed25519Keypair.generate();
      const file = writeKeystore(tmp.dir, [RUST_VECTOR, kp.getSecretKey()]);
      assert.equal(loadKeystore(file).address, RUST_VECTOR_ADDRESS);
      const second = loadKeystore(file, kp.toSuiAddress());
      assert.equal(second.address, kp.toSuiAddress());
      assert.equal(second.keypair.getSecretKey(), kp.getSecretKey());
      // Addresses are matched however they are written.
      assert.equal(
        loadKeystore(file, RUST_VECTOR_ADDRESS.toUpperCase().replace('0X', '0x')).address,
        RUST_VECTOR_ADDRESS,
      );
      // The old 65-byte form: flag, secret, public key.
      const secret = fromBase64(RUST_VECTOR).slice(1);
      const publicKey = Ed25519Keypair.fromSecretKey(secret).getPublicKey().toRawBytes();
      const old = writeKeystore(
        tmp.dir,
        [toBase64(new Uint8Array([0, ...secret, ...publicKey]))],
        'old.keystore',
      );
      assert.equal(loadKeystore(old).address, RUST_VECTOR_ADDRESS);
      const corrupt = new Uint8Array([0, ...secret, ...publicKey]);
      corrupt[64] = corrupt[64]! ^ 1;
      const bad = writeKeystore(tmp.dir, [toBase64(corrupt)], 'corrupt.keystore');
      assert.throws(() => loadKeystore(bad), /entry 1 is corrupt/);
    } finally {
      await tmp.remove();
    }
  });

  it('fails in one line, without key material: missing, not JSON, empty, malformed, unsupported, unknown', async () => {
    const tmp = tempDir();
    try {
      const oneLine = (fn: () => unknown, pattern: RegExp) =>
        assert.throws(fn, (error: Error) => {
          assert.ok(error instanceof KeystoreError);
          assert.match(error.message, pattern);
          assert.doesNotMatch(error.message, /\n/);
          assert.ok(!error.message.includes(RUST_VECTOR), 'no key material in the message');
          return true;
        });
      oneLine(() => loadKeystore(join(tmp.dir, 'nope.keystore')), /nope\.keystore does not exist/);
      oneLine(() => loadKeystore(writeKeystore(tmp.dir, '{oops', 'a')), /is not JSON/);
      oneLine(() => loadKeystore(writeKeystore(tmp.dir, { keys: [] }, 'b')), /not a JSON array/);
      oneLine(() => loadKeystore(writeKeystore(tmp.dir, [], 'c')), /has no keys/);
      oneLine(
        () => loadKeystore(writeKeystore(tmp.dir, [RUST_VECTOR, 'AAAA'], 'd')),
        /entry 2 is not a Sui private key/,
      );

      const k1 = Secp256k1Keypair.generate();
      const mixed = writeKeystore(tmp.dir, [entryOf(k1, 1), RUST_VECTOR], 'e');
      oneLine(() => loadKeystore(mixed), /uses the Secp256k1 signature scheme; only ED25519/);
      oneLine(() => loadKeystore(mixed, k1.toSuiAddress()), /Secp256k1/);
      assert.equal(loadKeystore(mixed, RUST_VECTOR_ADDRESS).address, RUST_VECTOR_ADDRESS);
      oneLine(
        () => loadKeystore(mixed, `0x${'12'.repeat(32)}`),
        /0x1212\S+ is not in the keystore .* \(it holds 2 addresses\)/,
      );
      oneLine(() => loadKeystore(mixed, 'alice'), /"alice" is not an address/);
    } finally {
      await tmp.remove();
    }
  });
});

describe('Sui adapter: opening', () => {
  it('validates the options and the AtomaDb object in one line, and discovers its initial shared version', async () => {
    const w = await world();
    try {
      const open = (patch: Partial<SuiNetworkOptions>) => SuiNetwork.open({ ...w.options, ...patch }, silent);
      const config = async (patch: Partial<SuiNetworkOptions>, pattern: RegExp) =>
        assert.rejects(open(patch), (error: Error) => {
          assert.ok(error instanceof SuiConfigError, `${error.name}: ${error.message}`);
          assert.match(error.message, pattern);
          assert.doesNotMatch(error.message, /\n/);
          return true;
        });
      // Malformed ids, URLs and caps never get here: the settings refuse them (test/config.test.ts).
      await config(
        { atomaDbId: `0x${'0'.repeat(60)}1234` },
        /AtomaDb object 0x0+1234 does not exist on the fullnode/,
      );
      const coin = w.double.coinsOf(w.kp.toSuiAddress())[0]!.id;
      await config({ atomaDbId: coin }, /is a 0x0+2::coin::Coin<.*>, not an Atoma db::AtomaDb/);
      await config({ atomaDbInitialSharedVersion: 99n }, /configured as 99, but the object's is 3/);
      await config(
        { keystore: join(w.dir, 'missing.keystore'), keystoreSource: 'NODE_DAEMON_SUI_KEYSTORE' },
        /missing\.keystore does not exist \(set by NODE_DAEMON_SUI_KEYSTORE\); point --sui-keystore \(NODE_DAEMON_SUI_KEYSTORE\) at the Sui CLI's keystore file$/,
      );
      await config({ address: `0x${'ab'.repeat(32)}` }, /is not in the keystore .*holds 1 address\)/);
      // fetch never connects to port 1 (a WHATWG "bad port"): a setting that can never work.
      await config(
        { url: 'http://127.0.0.1:1' },
        /^cannot use the Sui fullnode URL http:\/\/127\.0\.0\.1:1: fetch refuses to connect to port 1/,
      );
      // A configured version that matches is accepted.
      const again = await open({ atomaDbInitialSharedVersion: 3n });
      await again.close();
      assert.equal(w.sui.signerAddress, w.kp.toSuiAddress());
    } finally {
      await w.close();
    }
  });
});

describe('Sui adapter: a fullnode that is not there yet', () => {
  /** A double's ids and a port nothing listens on any more: start it, note what it is, stop it. */
  async function absentFullnode(dir: string, signerAddress: string) {
    const dataDir = join(dir, 'chain');
    const first = await FullnodeDouble.start({ dataDir, signerAddress });
    const { url, packageId, atomaDbId } = first;
    await first.close();
    const port = Number(new URL(url).port);
    return {
      url,
      packageId,
      atomaDbId,
      /** Starts the fullnode (the same chain) on that port. */
      start: () => FullnodeDouble.start({ dataDir, signerAddress, port }),
    };
  }

  const unavailable = (message: string) => (error: Error) => {
    assert.ok(error instanceof ChainUnavailableError, `${error.name}: ${error.message}`);
    assert.equal(error.message, message);
    return true;
  };

  it('opens without it, names it once in every failure, and connects once it answers', async () => {
    const tmp = tempDir('sui-absent-');
    const kp = Ed25519Keypair.generate();
    const keystore = writeKeystore(tmp.dir, [entryOf(kp)]);
    // backoffDelay with Math.random() = 0.99: 495 ms after the first failed check, 990 ms after the second.
    const random = mock.method(Math, 'random', () => 0.99);
    const log = captureLogger();
    let double: FullnodeDouble | undefined;
    let sui: SuiNetwork | undefined;
    try {
      const absent = await absentFullnode(tmp.dir, kp.toSuiAddress());
      const reason = `cannot reach the Sui fullnode at ${absent.url}: connection refused (ECONNREFUSED)`;
      sui = await SuiNetwork.open(
        {
          url: absent.url,
          packageId: absent.packageId,
          atomaDbId: absent.atomaDbId,
          atomaDbInitialSharedVersion: undefined,
          keystore,
          address: undefined,
          gasBudgetCap: DEFAULT_GAS_BUDGET_CAP,
        },
        log.logger,
      );
      assert.equal(sui.signerAddress, kp.toSuiAddress());
      assert.equal(sui.unavailableReason(), reason);
      const open = sui;
      const calls = [
        () => open.listBadges(),
        () => open.currentEpoch(),
        () => open.parameters(),
        () => open.getTicket(1),
        () => open.events.readPage(null),
        () => open.submit({ kind: 'register_node' }),
      ];
      for (const call of calls) await assert.rejects(call(), unavailable(reason));
      // Said once (the retries between go to debug).
      const said = log
        .lines()
        .filter((l) => Number(l.level) >= 40)
        .map((l) => String(l.msg))
        .filter((m) => m.includes('Sui fullnode'));
      assert.deepEqual(said, [`${reason}; serving the store meanwhile, retrying`]);

      double = await absent.start();
      // Within the back-off, a call answers at once with the last reason, without asking the fullnode;
      // the event source's read (whose caller backs off) checks again, and connects.
      await assert.rejects(sui.listBadges(), (error: Error) => {
        assert.ok(error instanceof ChainUnavailableError);
        assert.equal(error.message, reason);
        assert.equal(error.retryAfterSeconds, 1);
        return true;
      });
      assert.deepEqual(double.requests, []);
      const page = await sui.events.readPage(null);
      assert.equal(readEnvelope(page.events[0]!.raw).name, 'PublishedEvent');
      assert.equal(sui.unavailableReason(), undefined);
      assert.ok(log.lines().some((l) => l.msg === 'connected to the Sui fullnode'));
      assert.equal((await sui.submit({ kind: 'register_node' })).status, 'success');
      assert.equal((await sui.listBadges()).length, 1);
    } finally {
      random.mock.restore();
      await sui?.close();
      await double?.close();
      await tmp.remove();
    }
  });

  it('says so, and keeps going, when the fullnode that answers at last has no such AtomaDb', async () => {
    const tmp = tempDir('sui-absent-');
    const kp = Ed25519Keypair.generate();
    const keystore = writeKeystore(tmp.dir, [entryOf(kp)]);
    const log = captureLogger();
    let double: FullnodeDouble | undefined;
    let sui: SuiNetwork | undefined;
    try {
      const absent = await absentFullnode(tmp.dir, kp.toSuiAddress());
      const missing = `0x${'0'.repeat(60)}1234`;
      sui = await SuiNetwork.open(
        {
          url: absent.url,
          packageId: absent.packageId,
          atomaDbId: missing,
          atomaDbInitialSharedVersion: undefined,
          keystore,
          address: undefined,
          gasBudgetCap: DEFAULT_GAS_BUDGET_CAP,
        },
        log.logger,
      );
      double = await absent.start();
      const problem = `AtomaDb object ${missing} does not exist on the fullnode at ${absent.url} (check the id and the network)`;
      await assert.rejects(sui.events.readPage(null), unavailable(problem));
      assert.equal(sui.unavailableReason(), problem);
      await assert.rejects(sui.submit({ kind: 'register_node' }), unavailable(problem));
      await assert.rejects(sui.events.readPage(null), unavailable(problem));
      const errors = log.lines().filter((l) => l.level === 50);
      assert.deepEqual(
        errors.map((l) => l.msg),
        [`${problem}; serving the store meanwhile, retrying`],
        'said once, however often it is met',
      );
      assert.deepEqual(double.executed, []);
    } finally {
      await sui?.close();
      await double?.close();
      await tmp.remove();
    }
  });
});

describe('Sui adapter: writes', () => {
  it('builds every operation as the contract signature says, and they execute with the contract rules', async () => {
    const w = await world();
    try {
      const { double, sui } = w;
      const db = double.atomaDbId;
      const badge = await register(w);
      const node = BigInt(badge.node_small_id);
      const sent: { op: Operation; submission: Submission }[] = [];
      const submit = async (op: Operation, expect: 'success' | string) => {
        const submission = await sui.submit(op);
        sent.push({ op, submission });
        if (expect === 'success')
          assert.equal(submission.status, 'success', JSON.stringify(submission.abort));
        else {
          assert.equal(submission.status, 'failure');
          assert.equal(submission.abort?.name, expect);
        }
        assertDecodes(submission.events);
        return submission;
      };
      const proof = new Uint8Array(32).fill(7);
      const leaf = new Uint8Array(32).fill(9);

      await submit({ kind: 'add_node_to_model', badge, model_name: MODEL, echelon_id: 2 }, 'success');
      const task = (await double.dev.createTask({ role: 0, model_name: null, security_level: 0 }))
        .task_small_id!;
      await submit(
        {
          kind: 'subscribe_node_to_task',
          badge,
          task_small_id: task,
          price_per_one_million_compute_units: 1000,
        },
        'success',
      );
      await submit(
        {
          kind: 'update_node_subscription',
          badge,
          task_small_id: task,
          price_per_one_million_compute_units: 2000,
        },
        'success',
      );
      const stack = (
        await double.dev.buyStack({
          task_small_id: task,
          num_compute_units: 1000,
          price_per_one_million_compute_units: 5000,
          selected_node_id: node,
        })
      ).stack_small_id!;
      const settled = await submit(
        {
          kind: 'try_settle_stack',
          badge,
          stack_small_id: stack,
          num_claimed_compute_units: 800,
          committed_stack_proof: proof,
          stack_merkle_leaf: leaf,
        },
        'success',
      );
      assert.ok((settled.events[0] as { type: string }).type.endsWith('::db::StackTrySettleEvent'));
      const epoch = BigInt(await sui.currentEpoch());
      assert.deepEqual(await sui.getTicket(stack), {
        stack_small_id: stack,
        selected_node_id: badge.node_small_id,
        dispute_settled_at_epoch: Number(epoch + 1n),
        is_in_dispute: false,
        requested_attestation_nodes: [],
        already_attested_nodes: [],
      });
      await submit(
        {
          kind: 'submit_stack_settlement_attestation',
          badge,
          stack_small_id: stack,
          committed_stack_proof: proof,
          stack_merkle_leaf: leaf,
        },
        'EStackDoesNotRequireSamplingConsensus',
      );
      await submit(
        { kind: 'start_attestation_dispute', badge, stack_small_id: stack, attestation_commitment: leaf },
        'ETaskSecurityLevelNotSamplingConsensus',
      );
      await submit(
        { kind: 'claim_funds', badge, settled_ticket_ids: [stack] },
        'EStackDisputePeriodIsNotOver',
      );
      await double.dev.advanceEpoch();
      await submit({ kind: 'claim_funds', badge, settled_ticket_ids: [stack] }, 'success');
      assert.equal(await sui.getTicket(stack), undefined, 'claimed: the ticket is gone');
      const confidential = (await double.dev.createTask({ role: 0, model_name: null, security_level: 1 }))
        .task_small_id!;
      await submit(
        {
          kind: 'subscribe_node_to_task',
          badge,
          task_small_id: confidential,
          price_per_one_million_compute_units: 1000,
        },
        'success',
      );
      const stack2 = (
        await double.dev.buyStack({
          task_small_id: confidential,
          num_compute_units: 1000,
          price_per_one_million_compute_units: 3000,
          selected_node_id: node,
        })
      ).stack_small_id!;
      await submit(
        {
          kind: 'claim_funds_for_stacks',
          badge,
          stack_small_ids: [stack2],
          num_compute_units_per_stack_to_claim: [600],
        },
        'success',
      );
      await submit({ kind: 'unsubscribe_node_from_task', badge, task_small_id: task }, 'success');

      // Every kind of operation was sent.
      const kinds = new Set(['register_node', ...sent.map((s) => s.op.kind)]);
      assert.equal(kinds.size, 10);

      // The bytes the double received decode to the right target and arguments, in contract order.
      const pkg = double.packageId;
      const records = double.executed.slice(1);
      assert.equal(records.length, sent.length);
      const register0 = decode(double.executed[0]!.bytes);
      assert.equal(register0.target, `${pkg}::db::register_node_entry`);
      assert.equal(register0.inputs.length, 1);
      assertShared(register0.inputs[0]!, db, ATOMA_DB_INITIAL_SHARED_VERSION, true);
      for (const [i, { op, submission }] of sent.entries()) {
        const record = records[i]!;
        assert.equal(record.digest, submission.digest);
        const { target, inputs } = decode(record.bytes);
        assertShared(inputs[0]!, db, ATOMA_DB_INITIAL_SHARED_VERSION, true);
        assertBadge(inputs[1]!, badge);
        const rest = inputs.slice(2);
        switch (op.kind) {
          case 'add_node_to_model':
            assert.equal(target, `${pkg}::db::add_node_to_model`);
            assert.deepEqual([bcs.string().parse(pure(rest[0]!)), u64(rest[1]!)], [MODEL, '2']);
            break;
          case 'subscribe_node_to_task':
          case 'update_node_subscription':
            assert.equal(target, `${pkg}::db::${op.kind}`);
            assert.deepEqual(rest.map(u64), [
              String(op.task_small_id),
              String(op.price_per_one_million_compute_units),
            ]);
            break;
          case 'unsubscribe_node_from_task':
            assert.equal(target, `${pkg}::db::unsubscribe_node_from_task`);
            assert.deepEqual(rest.map(u64), [String(task)]);
            break;
          case 'try_settle_stack':
            assert.equal(target, `${pkg}::db::try_settle_stack`);
            assert.equal(rest.length, 5);
            assert.deepEqual([u64(rest[0]!), u64(rest[1]!)], [String(stack), '800']);
            assert.deepEqual(bytesOf(rest[2]!), Array.from(proof));
            assert.deepEqual(bytesOf(rest[3]!), Array.from(leaf));
            // upstream B16: the Random object 0x8, shared, immutable, at its discovered initial version.
            assertShared(rest[4]!, `0x${'0'.repeat(63)}8`, RANDOM_INITIAL_SHARED_VERSION, false);
            break;
          case 'submit_stack_settlement_attestation':
            assert.equal(target, `${pkg}::db::submit_stack_settlement_attestation`);
            assert.equal(rest.length, 3);
            assert.equal(u64(rest[0]!), String(stack));
            assert.deepEqual(bytesOf(rest[1]!), Array.from(proof));
            assert.deepEqual(bytesOf(rest[2]!), Array.from(leaf));
            break;
          case 'start_attestation_dispute':
            assert.equal(target, `${pkg}::db::start_attestation_dispute`);
            assert.equal(rest.length, 2);
            assert.equal(u64(rest[0]!), String(stack));
            assert.deepEqual(bytesOf(rest[1]!), Array.from(leaf));
            break;
          case 'claim_funds':
            assert.equal(target, `${pkg}::db::claim_funds`);
            assert.deepEqual(rest.map(u64s), [[String(stack)]]);
            break;
          case 'claim_funds_for_stacks':
            assert.equal(target, `${pkg}::db::claim_funds_for_stacks`);
            assert.deepEqual(rest.map(u64s), [[String(stack2)], ['600']]);
            break;
          default:
            assert.fail(`unexpected ${op.kind}`);
        }
      }
      assert.equal(double.equivocations, 0);
      assert.deepEqual(double.refused, []);
    } finally {
      await w.close();
    }
  });

  it('signs with the keystore key: every signature verifies for its address, and a foreign one is refused', async () => {
    const w = await world();
    try {
      const badge = await register(w);
      await w.sui.submit({ kind: 'add_node_to_model', badge, model_name: MODEL, echelon_id: 1 });
      assert.equal(w.double.executed.length, 2);
      for (const record of w.double.executed) {
        assert.equal(record.signatures.length, 1);
        const signature = record.signatures[0]!;
        assert.equal(parseSerializedSignature(signature).signatureScheme, 'ED25519');
        const key = await verifyTransactionSignature(record.bytes, signature, {
          address: w.kp.toSuiAddress(),
        });
        assert.equal(key.toSuiAddress(), w.kp.toSuiAddress());
        assert.equal(decode(record.bytes).data.sender, w.kp.toSuiAddress());
        const tampered = new Uint8Array(record.bytes);
        tampered[tampered.length - 1] = tampered[tampered.length - 1]! ^ 1;
        await assert.rejects(
          verifyTransactionSignature(tampered, signature, { address: w.kp.toSuiAddress() }),
        );
      }
      // The double checks signatures: the same bytes signed by another key are refused before execution.
      const record = w.double.executed[1]!;
      const other = Ed25519Keypair.generate();
      const { signature } = await other.signTransaction(record.bytes);
      const forged = Transaction.from(record.bytes);
      forged.setGasBudget(BigInt(decode(record.bytes).data.gasData.budget!) + 1n);
      const bytes = await forged.build();
      const client = new SuiGrpcClient({ network: 'unknown', baseUrl: w.double.url });
      await assert.rejects(
        client.executeTransaction({ transaction: bytes, signatures: [signature] }),
        /Invalid user signature/,
      );
      assert.equal(w.double.executed.length, 2);
    } finally {
      await w.close();
    }
  });

  it('returns aborts as failures named from the contract (and the framework), which the API answers with 422', async () => {
    const w = await world();
    try {
      const badge = await register(w);
      const notFound = await w.sui.submit({
        kind: 'subscribe_node_to_task',
        badge,
        task_small_id: 99,
        price_per_one_million_compute_units: 1,
      });
      assert.equal(notFound.status, 'failure');
      assert.deepEqual(notFound.abort, {
        name: 'ETaskNotFound',
        code: dbErrorCode('ETaskNotFound'),
        module: 'db',
      });
      assert.equal(notFound.abort?.code, 312012017);
      assert.deepEqual(notFound.events, []);
      assert.ok(Number(notFound.gas_used.computation_cost) > 0, 'a failed transaction still pays gas');
      const problem = abortProblem(notFound, 'subscribe_node_to_task');
      assert.equal(ERRORS[problem.code].status, 422);
      assert.match(
        problem.message,
        new RegExp(`ETaskNotFound \\(abort code 312012017 in db\\); transaction ${notFound.digest}`),
      );
      assert.ok(w.double.executed.some((r) => r.digest === notFound.digest && r.status === 'failure'));

      const noStack = await w.sui.submit({
        kind: 'try_settle_stack',
        badge,
        stack_small_id: 42,
        num_claimed_compute_units: 1,
        committed_stack_proof: new Uint8Array(32),
        stack_merkle_leaf: new Uint8Array(32),
      });
      assert.deepEqual(noStack.abort, { name: 'EFieldDoesNotExist', code: 1, module: 'dynamic_field' });
      const unknownModel = await w.sui.submit({
        kind: 'add_node_to_model',
        badge,
        model_name: 'nope',
        echelon_id: 1,
      });
      assert.equal(unknownModel.abort?.name, 'EFieldDoesNotExist');
      const badEchelon = await w.sui.submit({
        kind: 'add_node_to_model',
        badge,
        model_name: MODEL,
        echelon_id: 7,
      });
      assert.deepEqual(badEchelon.abort, { name: 'EEchelonNotFound', code: 312012005, module: 'db' });

      // After failures (which still move the badge and the gas coin to new versions) the next one works.
      const ok = await w.sui.submit({ kind: 'add_node_to_model', badge, model_name: MODEL, echelon_id: 1 });
      assert.equal(ok.status, 'success');
      assert.equal(w.double.equivocations, 0);

      // Malformed arguments are refused before anything is built.
      await assert.rejects(
        w.sui.submit({ kind: 'add_node_to_model', badge, model_name: 'é', echelon_id: 1 }),
        (error: Error) => error instanceof ChainRejectedError && error.code === 'invalid_argument',
      );
      await assert.rejects(
        w.sui.submit({
          kind: 'claim_funds',
          badge: { badge_id: `0x${'9'.repeat(64)}`, node_small_id: 1 },
          settled_ticket_ids: [],
        }),
        (error: Error) => error instanceof ChainRejectedError && error.code === 'badge_not_owned',
      );
      await assert.rejects(
        w.sui.submit({ kind: 'claim_funds', badge: { ...badge, node_small_id: 5 }, settled_ticket_ids: [] }),
        (error: Error) => error instanceof ChainRejectedError && error.code === 'badge_not_owned',
      );
    } finally {
      await w.close();
    }
  });

  it('names an arithmetic error as the dev network does, from what a fullnode sends for it', async () => {
    const w = await world();
    try {
      const badge = await register(w);
      // A sampling-consensus stack at a price whose claim overflows u64: claimed × price × 1200 (§6).
      const task = (await w.double.dev.createTask({ role: 0, model_name: null, security_level: 2 }))
        .task_small_id!;
      const price = 5_000_000_000_000n;
      const op = { badge, task_small_id: task, price_per_one_million_compute_units: price };
      assert.equal((await w.sui.submit({ kind: 'subscribe_node_to_task', ...op })).status, 'success');
      const stack = (
        await w.double.dev.buyStack({
          task_small_id: task,
          num_compute_units: 1_000_000,
          price_per_one_million_compute_units: price,
          selected_node_id: badge.node_small_id,
        })
      ).stack_small_id!;
      const settled = await w.sui.submit({
        kind: 'try_settle_stack',
        badge,
        stack_small_id: stack,
        num_claimed_compute_units: 1_000_000,
        committed_stack_proof: new Uint8Array(32).fill(1),
        stack_merkle_leaf: new Uint8Array(32).fill(2),
      });
      assert.equal(settled.status, 'success');
      await w.double.dev.advanceEpoch();
      const claimed = await w.sui.submit({ kind: 'claim_funds', badge, settled_ticket_ids: [stack] });
      assert.equal(claimed.status, 'failure');
      assert.deepEqual(claimed.abort, arithmeticAbort('').abort);
      assert.deepEqual(claimed.abort, { name: 'ArithmeticError', code: 0, module: 'db' });
      const problem = abortProblem(claimed, 'claim_funds');
      assert.equal(ERRORS[problem.code].status, 422);
      assert.match(problem.message, /ArithmeticError/);

      // The double answered as a fullnode does: the kind, the location in the abort details, no code.
      const client = new SuiGrpcClient({ network: 'unknown', baseUrl: w.double.url });
      const { response } = await client.ledgerService.getTransaction({
        digest: claimed.digest,
        readMask: { paths: ['effects'] },
      });
      const error = response.transaction?.effects?.status?.error;
      assert.equal(error?.kind, GrpcTypes.ExecutionError_ExecutionErrorKind.MOVE_PRIMITIVE_RUNTIME_ERROR);
      assert.equal(error?.errorDetails.oneofKind, 'abort');
      const details = error.errorDetails.oneofKind === 'abort' ? error.errorDetails.abort : undefined;
      assert.equal(details?.abortCode, undefined);
      assert.equal(details?.location?.module, 'db');
      assert.equal(details?.location?.package, w.double.packageId);

      // Without a location (a fullnode sends none when it has none), the module is not guessed.
      const bare = { kind: error.kind, errorDetails: { oneofKind: undefined } } as const;
      assert.deepEqual(decodeExecutionError(bare), { name: 'ArithmeticError', code: 0, module: 'unknown' });
    } finally {
      await w.close();
    }
  });

  it('never equivocates: back-to-back, concurrent, and after another client moved a coin', async () => {
    const w = await world();
    try {
      const badge = await register(w);
      const task = (await w.double.dev.createTask({ role: 0, model_name: null, security_level: 0 }))
        .task_small_id!;
      const subscribed = await w.sui.submit({
        kind: 'subscribe_node_to_task',
        badge,
        task_small_id: task,
        price_per_one_million_compute_units: 1,
      });
      assert.equal(subscribed.status, 'success');
      const update = (price: number) =>
        w.sui.submit({
          kind: 'update_node_subscription',
          badge,
          task_small_id: task,
          price_per_one_million_compute_units: price,
        });
      const versions: bigint[] = [];
      for (let i = 0; i < 10; i++) {
        assert.equal((await update(100 + i)).status, 'success');
        versions.push(w.double.objectVersion(badge.badge_id)!);
      }
      assert.ok(
        versions.every((v, i) => i === 0 || v > versions[i - 1]!),
        'the badge moves on every time',
      );
      const concurrent = await Promise.all(Array.from({ length: 10 }, (_, i) => update(200 + i)));
      assert.ok(concurrent.every((s) => s.status === 'success'));
      assert.equal(new Set(concurrent.map((s) => s.digest)).size, 10);

      // Another client of the same address spends the gas coin: the fullnode refuses the stale ref and the
      // adapter rebuilds with fresh refs.
      for (const coin of w.double.coinsOf(w.kp.toSuiAddress())) w.double.touch(coin.id);
      w.double.touch(badge.badge_id);
      assert.equal((await update(999)).status, 'success');
      assert.ok(w.double.refused.some((r) => /ObjectVersionUnavailableForConsumption/.test(r.reason)));
      assert.equal(w.double.equivocations, 0);
      assert.equal(w.double.executed.length, 2 + 10 + 10 + 1);

      // The control: a second, different transaction signed over versions already consumed is what the
      // double calls an equivocation (and refuses). The adapter never produced one above.
      const replayed = Transaction.from(w.double.executed[5]!.bytes);
      replayed.setGasBudget(BigInt(decode(w.double.executed[5]!.bytes).data.gasData.budget!) + 1n);
      const bytes = await replayed.build();
      const { signature } = await w.kp.signTransaction(bytes);
      const client = new SuiGrpcClient({ network: 'unknown', baseUrl: w.double.url });
      await assert.rejects(
        client.executeTransaction({ transaction: bytes, signatures: [signature] }),
        /equivocation/,
      );
      assert.equal(w.double.equivocations, 1);
    } finally {
      await w.close();
    }
  });

  it('prices gas: reference price, simulated budget plus margin, the cap, overrides and the coins', async () => {
    const w = await world();
    try {
      await w.sui.submit({ kind: 'register_node' });
      const first = decode(w.double.executed[0]!.bytes).data.gasData;
      assert.equal(first.price, '1000');
      // The dev gas model: 1 000 units x 1 000 + 1 976 000 storage = 2 976 000, plus 20 %.
      assert.equal(first.budget, '3571200');
      assert.equal(first.payment?.length, 1);
      const [badge] = await w.sui.listBadges();
      const op: Operation = { kind: 'add_node_to_model', badge: badge!, model_name: MODEL, echelon_id: 1 };

      const coins = w.double.coinsOf(w.kp.toSuiAddress());
      const chosen = coins.find((c) => c.id !== first.payment![0]!.objectId)!;
      await w.sui.submit(
        { ...op, echelon_id: 2 },
        { gas: chosen.id, gas_budget: 4_000_000, gas_price: 1500 },
      );
      const second = decode(w.double.executed[1]!.bytes).data.gasData;
      assert.deepEqual(
        [second.payment![0]!.objectId, second.budget, second.price],
        [chosen.id, '4000000', '1500'],
      );

      const rejected = async (gas: Parameters<SuiNetwork['submit']>[1], code: string, pattern: RegExp) =>
        assert.rejects(w.sui.submit(op, gas), (error: Error) => {
          assert.ok(error instanceof ChainRejectedError, error.message);
          assert.equal(error.code, code);
          assert.match(error.message, pattern);
          return true;
        });
      await rejected({ gas_price: 999 }, 'gas_price_too_low', /below the reference gas price 1000/);
      await rejected(
        { gas_budget: 2_000_000_000 },
        'gas_budget_too_high',
        /above the configured cap of 1000000000/,
      );
      const foreign = w.double.mintCoin(`0x${'77'.repeat(32)}`, 5_000_000_000n);
      await rejected({ gas: foreign }, 'gas_coin_not_owned', /is not a SUI coin of 0x/);
      await rejected({ gas: chosen.id, gas_budget: 50_000_000_000 }, 'gas_budget_too_high', /cap/);
      assert.equal(w.double.executed.length, 2);

      const low = await SuiNetwork.open({ ...w.options, gasBudgetCap: 3_000_000n }, silent);
      await assert.rejects(low.submit(op), (error: Error) => {
        assert.ok(error instanceof ChainRejectedError);
        assert.equal(error.code, 'gas_budget_too_high');
        assert.match(error.message, /needs a gas budget of 3571200 MIST .* above the cap of 3000000 MIST/);
        return true;
      });
      await low.close();
    } finally {
      await w.close();
    }
  });

  it('names the missing gas: no coin, too little, and pays with several coins when one is not enough', async () => {
    const none = await world({ coins: [] });
    try {
      await assert.rejects(none.sui.submit({ kind: 'register_node' }), (error: Error) => {
        assert.ok(error instanceof ChainRejectedError);
        assert.equal(error.code, 'no_gas_coin');
        assert.ok(error.message.includes(none.kp.toSuiAddress()));
        return true;
      });
    } finally {
      await none.close();
    }
    const two = await world({ coins: [2_000_000n, 2_000_000n] });
    try {
      const registered = await two.sui.submit({ kind: 'register_node' });
      assert.equal(registered.status, 'success');
      assert.equal(decode(two.double.executed[0]!.bytes).data.gasData.payment?.length, 2);
      // The second coin was merged into the first, which paid 1 997 880 MIST net.
      assert.deepEqual(
        two.double.coinsOf(two.kp.toSuiAddress()).map((c) => c.balance),
        [4_000_000n - 1_997_880n],
      );
      const [badge] = await two.sui.listBadges();
      await assert.rejects(
        two.sui.submit({ kind: 'add_node_to_model', badge: badge!, model_name: MODEL, echelon_id: 1 }),
        (error: Error) => {
          assert.ok(error instanceof ChainRejectedError);
          assert.equal(error.code, 'insufficient_gas');
          assert.match(error.message, /hold 2002120 MIST, not enough for this transaction; fund the address/);
          return true;
        },
      );
      assert.equal(two.double.equivocations, 0);
    } finally {
      await two.close();
    }
  });

  it('resends the same bytes when the outcome is unknown, and settles it before the next transaction', async () => {
    const w = await world();
    try {
      // The answer is lost once: the same signed bytes are sent again and the recorded result comes back.
      w.double.dropResponses('ExecuteTransaction', 1);
      const registered = await w.sui.submit({ kind: 'register_node' });
      assert.equal(registered.status, 'success');
      assert.equal(w.double.executed.length, 1);
      const [badge] = await w.sui.listBadges();

      // Every answer is lost and the lookup fails too: the outcome is unknown, with the digest.
      w.double.dropResponses('ExecuteTransaction', 3);
      w.double.fail('GetTransaction', 1);
      const unknown = await w.sui
        .submit({ kind: 'add_node_to_model', badge: badge!, model_name: MODEL, echelon_id: 1 })
        .then(
          () => assert.fail('expected an unknown outcome'),
          (error: unknown) => error as ChainOutcomeUnknownError,
        );
      assert.ok(unknown instanceof ChainOutcomeUnknownError, String(unknown));
      assert.equal(unknown.digest, w.double.executed[1]?.digest, 'it had in fact executed');
      // The next submission first learns what happened to it, then goes ahead with current refs.
      const next = await w.sui.submit({
        kind: 'add_node_to_model',
        badge: badge!,
        model_name: MODEL,
        echelon_id: 2,
      });
      assert.equal(next.abort?.name, 'ENodeAlreadySubscribedToModel', 'the earlier one did execute');
      assert.equal(w.double.executed.length, 3);
      assert.equal(w.double.equivocations, 0);
      assert.deepEqual(w.double.refused, []);
    } finally {
      await w.close();
    }
  });

  it('says the chain is unavailable, with nothing executed, when the fullnode cannot be reached', async () => {
    const w = await world();
    const badge = await register(w);
    await w.double.close();
    try {
      // Reads fail as unavailable (and drop the connections the closed server left behind).
      await assert.rejects(w.sui.listBadges(), ChainUnavailableError);
      await assert.rejects(w.sui.events.readPage(null), ChainUnavailableError);
      // With a budget given there is no simulation: the execution itself cannot connect.
      await assert.rejects(
        w.sui.submit(
          { kind: 'add_node_to_model', badge, model_name: MODEL, echelon_id: 1 },
          { gas_budget: 4_000_000 },
        ),
        (error: Error) => {
          assert.ok(error instanceof ChainUnavailableError, `${error.name}: ${error.message}`);
          assert.match(error.message, /cannot reach the Sui fullnode .*ECONNREFUSED/);
          return true;
        },
      );
    } finally {
      await w.close();
    }
  });
});

describe('Sui adapter: reads and events', () => {
  it('reads badges, epoch, parameters and tickets; wakes listeners after its own writes', async () => {
    const w = await world({ attestationNodes: 2 });
    try {
      let woken = 0;
      const stop = w.sui.onNewEvents(() => {
        woken += 1;
      });
      assert.deepEqual(await w.sui.listBadges(), []);
      const badge = await register(w);
      assert.equal(woken, 1);
      const failed = await w.sui.submit({ kind: 'claim_funds', badge, settled_ticket_ids: [1] });
      assert.equal(failed.status, 'failure');
      assert.equal(woken, 1, 'a failed transaction emits nothing');
      stop();
      await register(w);
      assert.equal(woken, 1);
      const badges = await w.sui.listBadges();
      assert.deepEqual(
        badges.map((b) => b.node_small_id),
        [1, 2],
      );
      // A peer's badge is not the signer's.
      const peer = await w.double.dev.createPeerNode();
      assert.equal((await w.sui.listBadges()).length, 2);
      await assert.rejects(
        w.sui.submit({
          kind: 'claim_funds',
          badge: { badge_id: peer.badge_id!, node_small_id: peer.node_small_id! },
          settled_ticket_ids: [],
        }),
        (error: Error) => error instanceof ChainRejectedError && error.code === 'badge_not_owned',
      );
      assert.equal(await w.sui.currentEpoch(), 0);
      // The signer's SUI for gas: its coins, less what its transactions paid.
      const sum = w.double.coinsOf(w.sui.signerAddress).reduce((total, coin) => total + coin.balance, 0n);
      assert.ok(sum > 0n && sum < 20_000_000_000n, String(sum));
      assert.deepEqual(await w.sui.balances(), { SUI: Number(sum) });
      await w.double.dev.advanceEpoch();
      assert.equal((await w.sui.parameters()).cross_validation_extra_nodes_count, 2n);
      assert.equal(await w.sui.getTicket(1), undefined);
    } finally {
      await w.close();
    }
  });

  it('delivers the db events ascending with their cursor, in the form the indexer decodes', async () => {
    const w = await world();
    try {
      const badge = await register(w);
      const mine = await w.sui.submit({ kind: 'add_node_to_model', badge, model_name: MODEL, echelon_id: 1 });
      await w.double.dev.createTask({
        role: 1,
        model_name: 'm',
        security_level: 2,
        minimum_reputation_score: 40,
      });
      const page = await w.sui.events.readPage(null);
      // Every call in gRPC-web's binary form: the SDK's default text form (base64) cost the live indexer
      // about a fifth of each event.
      assert.deepEqual(new Set(w.double.requests.map((r) => r.form)), new Set(['binary']));
      assert.equal(w.sui.events.id, `sui:${w.double.packageId}`);
      assert.equal(page.hasMore, false);
      assert.ok(page.nextCursor);
      const names = page.events.map((e) => readEnvelope(e.raw).name);
      assert.deepEqual(names, [
        'PublishedEvent',
        'NodeRegisteredEvent',
        'NodeSubscribedToModelEvent',
        'TaskRegisteredEvent',
      ]);
      assertDecodes(page.events.map((e) => e.raw));
      const registered = page.events[1]!;
      assert.equal(readEnvelope(registered.raw).sender, w.kp.toSuiAddress());
      assert.match(registered.position, /^sui:[1-9A-HJ-NP-Za-km-z]+:0$/);
      // A submission's events are the events the source delivers (so a write can wait for their keys).
      const { timestampMs: _time, ...submitted } = mine.events[0] as Record<string, unknown>;
      assert.deepEqual(page.events[2]!.raw, submitted);
      const task = decodePayload(
        'TaskRegisteredEvent',
        (page.events[3]!.raw as { parsedJson: unknown }).parsedJson,
      );
      assert.deepEqual(task.payload, {
        task_id: (page.events[3]!.raw as { parsedJson: { task_id: string } }).parsedJson.task_id,
        task_small_id: 1,
        role: 1,
        model_name: 'm',
        security_level: 2,
        minimum_reputation_score: 40,
      });
      // Byte vectors come out as arrays of numbers (the gRPC JSON would have base64 strings).
      const settle = DB_EVENT_LAYOUTS.StackTrySettleEvent!;
      const json = {
        stack_small_id: { inner: '3' },
        selected_node_id: { inner: '1' },
        requested_attestation_nodes: [{ inner: '2' }],
        committed_stack_proof: [1, 2, 3],
        stack_merkle_leaf: [4],
        num_claimed_compute_units: '10',
      };
      const encoded = settle.serialize(json as never).toBytes();
      assert.deepEqual(parsedJsonFromBcs(`${w.double.packageId}::db::StackTrySettleEvent`, encoded), json);
      assert.equal(
        parsedJsonFromBcs(`${w.double.packageId}::db::StackTrySettleEvent`, encoded.slice(1)),
        undefined,
      );
      // Bytes left over: a longer event than this layout reads is not this event.
      assert.equal(
        parsedJsonFromBcs(`${w.double.packageId}::db::StackTrySettleEvent`, new Uint8Array([...encoded, 0])),
        undefined,
      );
      // The layout is the contract's field order: NodeRegisteredEvent is a 32-byte id then a u64.
      const nodeEvent = DB_EVENT_LAYOUTS.NodeRegisteredEvent!.serialize({
        badge_id: `0x${'ab'.repeat(32)}`,
        node_small_id: { inner: '258' },
      } as never);
      assert.deepEqual(Array.from(nodeEvent.toBytes()), [...Array(32).fill(0xab), 2, 1, 0, 0, 0, 0, 0, 0]);
      // IDs and addresses come out as bcs.Address renders them, leading zeros kept, in any part of a buffer;
      // a short address goes in as Sui pads it.
      const created = DB_EVENT_LAYOUTS.StackCreatedEvent!;
      const ids = { stack_id: `0x00${'0f'.repeat(31)}`, owner: `0x${'0'.repeat(63)}7` };
      const stack = {
        ...ids,
        stack_small_id: { inner: '5' },
        task_small_id: { inner: '1' },
        selected_node_id: { inner: '2' },
        num_compute_units: '18446744073709551615',
        price_per_one_million_compute_units: '0',
      };
      const stackBytes = created.serialize({ ...stack, owner: '0x7' } as never).toBytes();
      const inside = new Uint8Array(stackBytes.length + 3);
      inside.set(stackBytes, 3);
      for (const bytes of [stackBytes, inside.subarray(3)]) {
        assert.deepEqual(parsedJsonFromBcs(`${w.double.packageId}::db::StackCreatedEvent`, bytes), stack);
      }
      // The SDK's own rendering of the same bytes (the stack's id, then its u64 small id, then the owner).
      assert.equal(bcs.Address.parse(stackBytes.subarray(0, 32)), ids.stack_id);
      assert.equal(bcs.Address.parse(stackBytes.subarray(40, 72)), ids.owner);

      // Nothing new: the cursor stays and the page is empty.
      const again = await w.sui.events.readPage(page.nextCursor);
      assert.deepEqual(
        { ...again, parameters: undefined },
        { events: [], nextCursor: page.nextCursor, hasMore: false, epoch: 0, parameters: undefined },
      );
      // With the AtomaDb parameters as of the read, as the dev network under the double has them.
      assert.deepEqual(again.parameters, await w.double.dev.parameters());
    } finally {
      await w.close();
    }
  });

  it("asks for the events' JSON rendering only for a page whose contents do not decode", async () => {
    const w = await world();
    try {
      const badge = await register(w);
      await w.sui.submit({ kind: 'add_node_to_model', badge, model_name: MODEL, echelon_id: 1 });
      const listings = () =>
        w.double.requests.filter((r) => r.method === 'ListEvents').map((r) => r.paths.includes('json'));
      const first = await w.sui.events.readPage(null);
      assert.deepEqual(listings(), [false], 'every event decodes from its BCS contents: no JSON asked for');
      assertDecodes(first.events.map((e) => e.raw));

      // After an upgrade that grew NodeSubscribedToModelEvent, its contents no longer read with our layout:
      // the page is read again with the JSON rendering, which stands in for that event alone.
      w.double.growContents('NodeSubscribedToModelEvent');
      const again = await w.sui.events.readPage(null);
      assert.deepEqual(listings(), [false, false, true]);
      assert.deepEqual(
        again.events.map((e) => e.position),
        first.events.map((e) => e.position),
      );
      const parsed = (i: number, page = again) => (page.events[i]!.raw as { parsedJson: unknown }).parsedJson;
      assert.deepEqual(parsed(0), parsed(0, first), 'the others still decode from their contents');
      assert.deepEqual(parsed(1), parsed(1, first));
      assert.deepEqual(parsed(2), parsed(2, first), 'the JSON rendering says what the contents said');
      assertDecodes(again.events.map((e) => e.raw));
    } finally {
      await w.close();
    }
  });

  it("gives each event its transaction's epoch and each page the chain's, across epoch changes", async () => {
    const w = await world();
    try {
      const badge = await register(w);
      await w.double.dev.advanceEpoch();
      await w.sui.submit({ kind: 'add_node_to_model', badge, model_name: MODEL, echelon_id: 1 });
      await w.double.dev.createTask({ role: 0, model_name: null, security_level: 0 });
      await w.double.dev.advanceEpoch();
      await w.double.dev.advanceEpoch();
      await w.double.dev.createTask({ role: 0, model_name: null, security_level: 0 });
      await w.double.dev.advanceEpoch();

      // A fresh adapter, which has learnt nothing yet, reads from the start.
      const sui = await SuiNetwork.open(w.options, silent);
      try {
        const page = await sui.events.readPage(null);
        assert.deepEqual(
          page.events.map((e) => [readEnvelope(e.raw).name, e.epoch]),
          [
            ['PublishedEvent', 0],
            ['NodeRegisteredEvent', 0],
            ['NodeSubscribedToModelEvent', 1],
            ['TaskRegisteredEvent', 1],
            ['TaskRegisteredEvent', 3],
          ],
        );
        assert.equal(page.epoch, 4, 'epochs pass without events');
        // The same epochs as the dev network (behind the double) gives the same events.
        const dev = await w.double.dev.events.readPage(null);
        assert.deepEqual(
          page.events.map((e) => e.epoch),
          dev.events.map((e) => e.epoch),
        );
        assert.equal(page.epoch, dev.epoch);
        // The double's ledger is consistent: epochs are runs of checkpoints, the head is in the current one.
        const ledger = new SuiGrpcClient({ network: 'unknown', baseUrl: w.double.url }).ledgerService;
        const paths = ['epoch', 'first_checkpoint', 'last_checkpoint'];
        let first = 0n;
        for (let epoch = 0n; epoch <= 4n; epoch++) {
          const range = (await ledger.getEpoch({ epoch, readMask: { paths } })).response.epoch!;
          assert.equal(range.firstCheckpoint, first);
          if (epoch < 4n) first = range.lastCheckpoint! + 1n;
          else assert.equal(range.lastCheckpoint, undefined, 'the running epoch has no last checkpoint');
        }
        const head = (await ledger.getServiceInfo({})).response;
        assert.equal(head.epoch, 4n);
        const summary = await ledger.getCheckpoint({
          checkpointId: { oneofKind: 'sequenceNumber', sequenceNumber: head.checkpointHeight! },
          readMask: { paths: ['summary.epoch'] },
        });
        assert.equal(summary.response.checkpoint?.summary?.epoch, 4n);
        assert.equal(summary.response.checkpoint?.summary?.timestamp, undefined, 'only what the mask asks');
        assert.deepEqual((await ledger.getEpoch({})).response.epoch, { epoch: 4n });
        // And the epoch an execution's effects report.
        const next = await sui.submit({ kind: 'register_node' });
        const tail = await sui.events.readPage(page.nextCursor);
        assert.deepEqual(
          tail.events.map((e) => [readEnvelope(e.raw).key, e.epoch]),
          [[readEnvelope(next.events[0]).key, 4]],
        );
      } finally {
        await sui.close();
      }
    } finally {
      await w.close();
    }
  });

  it('looks each epoch up about once, however many events it holds', async () => {
    const w = await world();
    try {
      const EPOCHS = 5;
      // Four fifths of a page an epoch: pages that cross epochs, and at least four of them.
      const PER_EPOCH = (EVENT_PAGE_SIZE * 4) / 5;
      for (let epoch = 0; epoch < EPOCHS; epoch++) {
        for (let i = 0; i < PER_EPOCH; i++)
          await w.double.dev.createTask({ role: 0, model_name: null, security_level: 0 });
        if (epoch < EPOCHS - 1) await w.double.dev.advanceEpoch();
      }
      const LOOKUPS = new Set(['GetServiceInfo', 'GetEpoch', 'GetCheckpoint']);
      const lookupsSince = (since: number) =>
        w.double.requests
          .slice(since)
          .filter((r) => LOOKUPS.has(r.method))
          .map((r) => r.method);

      const sui = await SuiNetwork.open(w.options, silent);
      try {
        const since = w.double.requests.length;
        const epochs: unknown[] = [];
        let cursor: string | null = null;
        let pages = 0;
        for (;;) {
          const page = await sui.events.readPage(cursor);
          pages += 1;
          epochs.push(...page.events.map((e) => e.epoch));
          assert.equal(page.epoch, EPOCHS - 1);
          cursor = page.nextCursor;
          if (!page.hasMore) break;
        }
        const expected = [
          0,
          ...Array.from({ length: EPOCHS * PER_EPOCH }, (_, i) => Math.floor(i / PER_EPOCH)),
        ];
        assert.deepEqual(epochs, expected);
        const catchingUp = lookupsSince(since);
        // The head and the running epoch's first checkpoint; a checkpoint and its epoch's range for the
        // first events; then one range per epoch.
        assert.ok(pages >= 4, `${pages} pages`);
        assert.deepEqual(catchingUp, [
          'GetServiceInfo',
          'GetEpoch',
          'GetCheckpoint',
          ...Array<string>(EPOCHS - 1).fill('GetEpoch'),
        ]);

        // Following the head: new events in the running epoch cost one head read per page at most.
        await w.double.dev.createTask({ role: 0, model_name: null, security_level: 0 });
        const tailSince = w.double.requests.length;
        const tail = await sui.events.readPage(cursor);
        assert.deepEqual(
          tail.events.map((e) => e.epoch),
          [EPOCHS - 1],
        );
        assert.ok(lookupsSince(tailSince).length <= 1, `${lookupsSince(tailSince)}`);
        // A new epoch: the head, and the new epoch's first checkpoint.
        await w.double.dev.advanceEpoch();
        await w.double.dev.createTask({ role: 0, model_name: null, security_level: 0 });
        const nextSince = w.double.requests.length;
        const next = await sui.events.readPage(tail.nextCursor);
        assert.deepEqual(
          next.events.map((e) => e.epoch),
          [EPOCHS],
        );
        assert.equal(next.epoch, EPOCHS);
        assert.deepEqual(lookupsSince(nextSince), ['GetServiceInfo', 'GetEpoch']);
      } finally {
        await sui.close();
      }
    } finally {
      await w.close();
    }
  });

  it('resumes after a restart exactly where the indexer stopped, page by page, and knows its lag', async () => {
    const w = await world();
    const storeDir = tempDir();
    try {
      await register(w);
      // A page and ten more events, with the registration and PublishedEvent.
      for (let i = 0; i < EVENT_PAGE_SIZE + 10; i++)
        await w.double.dev.createTask({ role: 0, model_name: null, security_level: 0 });
      assert.equal(await w.sui.lag(), undefined, 'nothing read yet');
      let store = new SqliteStore({ dataDir: storeDir.dir });
      const log = captureLogger();
      // One page only: the source is behind.
      const first = await w.sui.events.readPage(null);
      assert.equal(first.events.length, EVENT_PAGE_SIZE);
      assert.equal(first.hasMore, true);
      await applyPage(store, w.sui.events.id, first, log.logger);
      const behind = await w.sui.lag();
      assert.equal(behind?.caught_up, false);
      assert.ok((behind?.checkpoints ?? 0) > 0);
      assert.equal(typeof behind?.seconds, 'number');
      const rest = await catchUp(store, w.sui.events, log.logger);
      assert.equal(rest.totals.applied, 12, 'the events past the first page, less PublishedEvent');
      assert.equal(rest.totals.duplicate, 0);
      const caughtUp = await w.sui.lag();
      assert.equal(caughtUp?.caught_up, true);
      assert.ok((caughtUp?.seconds ?? 99) < 5);
      const saved = await store.getCursor(w.sui.events.id);
      assert.ok(saved?.cursor);
      await store.close();

      // Restart: a new store connection and a new adapter; only what happened since is read.
      await w.sui.close();
      await w.double.dev.createTask({ role: 0, model_name: null, security_level: 0 });
      const restarted = await SuiNetwork.open(w.options, silent);
      const badge = (await restarted.listBadges())[0]!;
      await restarted.submit({ kind: 'add_node_to_model', badge, model_name: MODEL, echelon_id: 1 });
      store = new SqliteStore({ dataDir: storeDir.dir });
      const resumed = await catchUp(store, restarted.events, log.logger);
      assert.equal(resumed.totals.applied, 2);
      assert.equal(resumed.totals.duplicate, 0, 'nothing was read twice');
      assert.equal((await store.listTasks()).length, EVENT_PAGE_SIZE + 11);
      await store.close();
      await restarted.close();
      assert.deepEqual(
        log.lines().filter((l) => (l.level as number) >= 40),
        [],
      );
    } finally {
      await w.close();
      await storeDir.remove();
    }
  });

  it("resumes a stop between the head's short transactions after the last event committed, reading none twice", async () => {
    const w = await world();
    const storeDir = tempDir();
    try {
      await register(w);
      // Less than a page: the indexer reads them at the head, in one page, and applies it in chunks.
      const TASKS = Math.min(120, EVENT_PAGE_SIZE - 2);
      for (let i = 0; i < TASKS; i++)
        await w.double.dev.createTask({ role: 0, model_name: null, security_level: 0 });
      const page = await w.sui.events.readPage(null);
      assert.equal(page.hasMore, false);
      assert.equal(page.events.length, TASKS + 2, 'PublishedEvent, the registration and the tasks');
      // Each event carries the cursor past it: reading from it gives the next event, and the last one's is
      // the page's.
      assert.equal(page.events.at(-1)!.cursor, page.nextCursor);
      for (const k of [0, 40, TASKS]) {
        const next = await w.sui.events.readPage(page.events[k]!.cursor!);
        assert.equal(next.events[0]!.position, page.events[k + 1]!.position);
      }

      let store = new SqliteStore({ dataDir: storeDir.dir });
      const log = captureLogger();
      // Another connection watches the saved cursor at every turn of the loop; once the first of the short
      // transactions has committed, the indexer's store goes away, as in a crash, and the next one fails.
      const watcher = new SqliteStore({ dataDir: storeDir.dir });
      const watch = async (): Promise<void> => {
        if ((await watcher.getCursor(w.sui.events.id)) === undefined) setImmediate(() => void watch());
        else await store.close();
      };
      setImmediate(() => void watch());
      await assert.rejects(catchUp(store, w.sui.events, log.logger, { headChunkEvents: 40 }));
      await watcher.close();
      store = new SqliteStore({ dataDir: storeDir.dir });
      const saved = await store.getCursor(w.sui.events.id);
      assert.equal(saved?.cursor, page.events[39]!.cursor, 'the cursor past the first transaction');
      const resumed = await catchUp(store, w.sui.events, log.logger, { headChunkEvents: 40 });
      assert.equal(resumed.totals.duplicate, 0, 'nothing was read twice');
      assert.equal(resumed.totals.applied + resumed.totals.ignored, TASKS + 2 - 40);
      assert.equal((await store.listTasks()).length, TASKS);
      await store.close();
    } finally {
      await w.close();
      await storeDir.remove();
    }
  });

  it('lets the live indexer back off on errors (growing, jittered delays) and recover', async () => {
    const w = await world();
    const storeDir = tempDir();
    const random = mock.method(Math, 'random', () => 0.5);
    const store = new SqliteStore({ dataDir: storeDir.dir });
    const log = captureLogger();
    const indexer = new LiveIndexer(store, w.sui.events, log.logger, { idleMs: 50 });
    try {
      const registered = await w.sui.submit({ kind: 'register_node' });
      const key = readEnvelope(registered.events[0]).key;
      w.double.fail('ListEvents', 3, 14, 'fullnode overloaded');
      const since = w.double.requests.length;
      indexer.start();
      const deadline = Date.now() + 8000;
      while (!(await store.hasEvents([{ key }]))) {
        assert.ok(Date.now() < deadline, 'the indexer recovered');
        // Reads keep working while the indexer retries.
        await store.listTasks();
        await new Promise((r) => setTimeout(r, 25));
      }
      const calls = w.double.requests.slice(since).filter((r) => r.method === 'ListEvents');
      const gaps = calls.slice(1, 4).map((c, i) => c.at - calls[i]!.at);
      // backoffDelay with Math.random() = 0.5: 250, 500, 1000 ms, never a hot loop.
      assert.equal(gaps.length, 3);
      assert.ok(gaps[0]! >= 240 && gaps[1]! >= 490 && gaps[2]! >= 990, `delays ${gaps}`);
      assert.ok(gaps[0]! < gaps[1]! && gaps[1]! < gaps[2]!, `growing delays ${gaps}`);
      const errors = log.lines().filter((l) => l.msg === 'indexer page failed; retrying');
      assert.deepEqual(
        errors.map((l) => l.failures),
        [1, 2, 3],
      );
      assert.match(String(errors[0]!.reason), /fullnode overloaded/);
      // The adapter said the fullnode's failure (once, in its own log): the indexer's retries are at debug.
      assert.ok(errors.every((l) => l.level === 20));
      assert.equal(indexer.lastError, undefined, 'cleared by the good page');
    } finally {
      random.mock.restore();
      await indexer.stop();
      await store.close();
      await w.close();
      await storeDir.remove();
    }
  });
});
