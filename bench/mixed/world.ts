/**
 * bench:mixed's world: the fullnode TEST DOUBLE of the test suite (the outside boundary, not our code) with
 * its tasks and 20 peer nodes, the daemon following it as an operator runs it on --network sui, and the
 * operator's node with its stacks, the peers' stacks and the live stream's held transactions.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeSuiPrivateKey } from '@mysten/sui/cryptography';
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519';
import { toBase64 } from '@mysten/sui/utils';
import type { U64 } from '../../src/internal/u64.ts';
import { FullnodeDouble } from '../../test/sui/fullnode-double.ts';
import { call, json } from '../daemon-http.ts';
import { type Server, startDaemon as startPinnedDaemon } from '../servers.ts';
import { appliedEvents } from './metrics.ts';
import { OWN_STACKS, type Settings, STREAM_PER_SECOND, streamStacksFor } from './settings.ts';

const log = (line: string) => process.stderr.write(`${line}\n`);

export function sleep(seconds: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, seconds * 1000));
}

/** Checks `check` every 100 ms until it says yes; throws after `seconds`. */
export async function until(what: string, check: () => Promise<boolean>, seconds = 300): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await sleep(0.1);
  }
}

/** The operator's key, as a Sui CLI keystore in dir, and the fullnode double that funds its address. */
export async function startDouble(dir: string): Promise<{ double: FullnodeDouble; keystore: string }> {
  const kp = Ed25519Keypair.generate();
  const keystore = join(dir, 'sui.keystore');
  const secret = decodeSuiPrivateKey(kp.getSecretKey()).secretKey;
  writeFileSync(keystore, JSON.stringify([toBase64(new Uint8Array([0, ...secret]))]));
  const double = await FullnodeDouble.start({
    dataDir: join(dir, 'chain'),
    signerAddress: kp.toSuiAddress(),
    coins: [1000n * 1_000_000_000n],
  });
  return { double, keystore };
}

/** The chain's tasks and peers: the task our node serves, and the one 20 peer nodes serve. */
export interface Market {
  task: U64;
  peerTask: U64;
  peers: bigint[];
}

export async function createMarket(dev: FullnodeDouble['dev']): Promise<Market> {
  const publicTask = async (model: string) =>
    (
      await dev.createTask({
        role: 0,
        model_name: model,
        security_level: 0,
        minimum_reputation_score: null,
        is_public: true,
      })
    ).task_small_id!;
  const task = await publicTask('bench/own');
  const peerTask = await publicTask('bench/peers');
  const peers: bigint[] = [];
  for (let i = 0; i < 20; i++) {
    const peer = await dev.createPeerNode({
      subscriptions: [{ task_small_id: peerTask, price_per_one_million_compute_units: 1000 }],
    });
    peers.push(BigInt(peer.node_small_id!));
  }
  return { task, peerTask, peers };
}

/** The daemon under test, with its API token. */
export interface Daemon {
  server: Server;
  origin: string;
  token: string;
  /** performance.now() when it was spawned: BENCH_TRACE gives its clock. */
  spawned: number;
}

/**
 * Starts the daemon on CPU 0 following the double, as an operator runs it on --network sui (on the
 * database at databaseUrl, else on SQLite in dir), and waits until it answers /health.
 */
export async function startDaemon(
  settings: Settings,
  at: { root: string; dir: string; keystore: string; databaseUrl?: string },
  double: FullnodeDouble,
): Promise<Daemon> {
  const server = await startPinnedDaemon(
    at.root,
    {
      dataDir: join(at.dir, 'data'),
      databaseUrl: at.databaseUrl,
      // --profile DIR: the daemon writes a V8 CPU profile there when it stops (slower; not for numbers).
      cpuProfDir: settings.profile,
      nodeFlags: settings.daemonFlags,
      network: {
        url: double.url,
        packageId: double.packageId,
        atomaDbId: double.atomaDbId,
        keystore: at.keystore,
      },
    },
    { output: settings.daemonOutput, readySeconds: 300 },
  );
  const token = readFileSync(join(at.dir, 'data', 'api-token'), 'utf8').trim();
  return { server, origin: server.origin, token, spawned: performance.now() - server.startedInMs };
}

/** The operator's node and its own stacks, as the daemon lists them at ownPath. */
export interface OwnNode {
  node: number;
  own: number[];
  ownPath: string;
}

/**
 * Registers the operator's node and subscribes it to our task, buys OWN_STACKS stacks from it and the
 * background's from the peers, buys the live stream's stacks and holds them back, then waits until the
 * daemon has indexed the node's stacks.
 */
export async function setUpNode(
  settings: Settings,
  daemon: Daemon,
  double: FullnodeDouble,
  market: Market,
  engine: string,
): Promise<OwnNode> {
  const { origin, token } = daemon;
  const dev = double.dev;
  const registered = await json<{ node_small_id: number }>(origin, 'POST', '/nodes/register', token, {});
  const node = registered.node_small_id;
  await json(origin, 'POST', '/nodes/task-subscribe', token, {
    task_small_id: Number(market.task),
    price_per_one_million_compute_units: 1_000_000,
  });
  log(
    `${engine}: node ${node}; buying ${OWN_STACKS} stacks from it and ${settings.backgroundStacks} from 20 peers`,
  );
  const own: number[] = [];
  for (let i = 0; i < OWN_STACKS; i++) {
    const bought = await dev.buyStack({
      task_small_id: market.task,
      num_compute_units: 1_000_000,
      price_per_one_million_compute_units: 1_000_000,
      selected_node_id: node,
    });
    if (bought.submission.status !== 'success') {
      throw new Error(`buying a stack from node ${node} failed: ${JSON.stringify(bought.submission)}`);
    }
    own.push(Number(bought.stack_small_id));
  }
  let peerIndex = 0;
  const buyFromPeer = () =>
    dev.buyStack({
      task_small_id: market.peerTask,
      num_compute_units: 1_000_000,
      price_per_one_million_compute_units: 1000,
      selected_node_id: market.peers[peerIndex++ % market.peers.length]!,
    });
  for (let i = 0; i < settings.backgroundStacks; i++) await buyFromPeer();
  // The live stream's transactions, executed now and held back until a row lets them through.
  const streamStacks = streamStacksFor(settings);
  await double.holdEvents();
  log(`buying the stream's ${streamStacks} stacks (held until released at ${STREAM_PER_SECOND}/s)`);
  for (let i = 0; i < streamStacks; i++) await buyFromPeer();
  await double.encodeHeld();
  const ownPath = `/stacks/nodes/${node}`;
  await until(`the daemon has indexed node ${node}'s ${OWN_STACKS} stacks`, async () => {
    const stacks = await json<unknown[]>(origin, 'GET', ownPath);
    log(
      `  ${stacks.length} stacks; ${JSON.stringify((await json<{ indexer: unknown }>(origin, 'GET', '/status')).indexer)}`,
    );
    return stacks.length === OWN_STACKS;
  });
  return { node, own, ownPath };
}

/** The events the daemon's indexer applied, from /metrics (/status asks the fullnode for more than a count). */
async function indexedEvents(daemon: Daemon): Promise<number> {
  return appliedEvents((await call(daemon.origin, 'GET', '/metrics', daemon.token)).text);
}

/** Waits until the indexer has caught up: its count of applied events holds still for 1.5 s. */
export function caughtUp(daemon: Daemon): Promise<void> {
  return until('the indexer has caught up', async () => {
    const a = await indexedEvents(daemon);
    await sleep(1.5);
    return (await indexedEvents(daemon)) === a;
  });
}
