import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { EventPage, EventSource } from '../src/chain/chain.ts';
import {
  CATCH_UP_BUSY_CHUNK_EVENTS,
  CATCH_UP_BUSY_PAUSE_FACTOR,
  catchUp,
  HEAD_PAUSE_FACTOR,
} from '../src/indexer/run.ts';
import { DEFAULT_PARAMETERS } from '../src/protocol/constants.ts';
import { decodeEvent } from '../src/protocol/events.ts';
import { SqliteStore } from '../src/store/sqlite/sqlite-store.ts';
import type { IndexerTx } from '../src/store/store.ts';
import { captureLogger } from './helpers/capture-log.ts';
import { event, history, inner, type SuiEventJson } from './helpers/sui-events.ts';
import { tempDir } from './helpers/tmp.ts';

/**
 * TEST DOUBLE of the chain (the outside boundary): a source that answers its events as one page at the
 * head, at once, with no I/O. With it, any turn of the event loop during catchUp is one catchUp gave.
 */
/** The events at the head in one page; `decoded` gives them decoded already, as the file source does. */
function headSource(events: SuiEventJson[], form: 'raw' | 'decoded' = 'raw'): EventSource {
  return {
    id: 'test:head',
    readPage: async (cursor): Promise<EventPage> =>
      cursor === 'end'
        ? { events: [], nextCursor: 'end', hasMore: false }
        : {
            events: events.map((raw, i) =>
              form === 'raw'
                ? { position: `test:${i + 1}`, raw }
                : { position: `test:${i + 1}`, decoded: decodeEvent(raw) },
            ),
            nextCursor: 'end',
            hasMore: false,
          },
  };
}

/** The same, with the cursor past each event on it (as the dev network, Sui and file sources have). */
function cursorSource(events: SuiEventJson[]): EventSource {
  return {
    id: 'test:head',
    readPage: async (cursor): Promise<EventPage> => {
      const after = cursor === null ? 0 : Number(cursor);
      return {
        events: events
          .map((raw, i) => ({ position: `test:${i + 1}`, raw, cursor: String(i + 1) }))
          .slice(after),
        nextCursor: String(events.length),
        hasMore: false,
      };
    },
  };
}

/**
 * The same with a backlog: pages of pageSize, each saying more follow until the last, and saying the
 * chain's epoch and fee parameters when given them.
 */
function backlogSource(
  events: SuiEventJson[],
  pageSize = 100,
  chain: Pick<EventPage, 'epoch' | 'parameters'> = {},
): EventSource {
  return {
    id: 'test:head',
    readPage: async (cursor): Promise<EventPage> => {
      const after = cursor === null ? 0 : Number(cursor);
      const page = events.slice(after, after + pageSize);
      return {
        events: page.map((raw, i) => ({
          position: `test:${after + i + 1}`,
          raw,
          cursor: String(after + i + 1),
        })),
        nextCursor: String(after + page.length),
        hasMore: after + page.length < events.length,
        ...chain,
      };
    },
  };
}

/** Each indexer transaction's span, recorded around the real store's indexerTransaction. */
function recordSpans(store: SqliteStore): { from: number; to: number }[] {
  const spans: { from: number; to: number }[] = [];
  const transaction = store.indexerTransaction.bind(store);
  store.indexerTransaction = async <T>(fn: (tx: IndexerTx) => Promise<T>): Promise<T> => {
    const from = performance.now();
    try {
      return await transaction(fn);
    } finally {
      spans.push({ from, to: performance.now() });
    }
  };
  return spans;
}

/**
 * After each transaction but the last, the next began at least `factor` times the transaction's span later:
 * the indexer waited, on timers, that many times as long as the chunk (its decoding and its transaction)
 * took, whatever else the machine ran.
 */
function assertPausedBetween(spans: { from: number; to: number }[], factor: number): void {
  for (let i = 0; i + 1 < spans.length; i += 1) {
    const held = spans[i]!.to - spans[i]!.from;
    const gap = spans[i + 1]!.from - spans[i]!.to;
    assert.ok(
      gap >= factor * held,
      `after transaction ${i + 1} of ${held.toFixed(2)} ms, the next began ${gap.toFixed(2)} ms later`,
    );
  }
}

/** Turns of the event loop while `until` is pending (a chain of setImmediate callbacks). */
function loopTurns(): { stop(): number } {
  let turns = 0;
  let done = false;
  const tick = () => {
    if (done) return;
    turns += 1;
    setImmediate(tick);
  };
  setImmediate(tick);
  return {
    stop() {
      done = true;
      return turns;
    },
  };
}

/** What a store shows of the history: every node's stacks and claimed stacks, and its node events. */
async function shown(store: SqliteStore) {
  const nodes = [];
  for (let n = 1; n <= 20; n++) {
    nodes.push({ stacks: await store.listStacks(n), claimed: await store.listClaimedStacks(n) });
  }
  const events = (await store.listNodeEvents({ after: 0, limit: 100_000, nodes: null, types: null })).map(
    ({ type, node_small_id, other_node_small_id, data }) => ({
      type,
      node_small_id,
      other_node_small_id,
      data,
    }),
  );
  return { nodes, events };
}

describe('the live indexer at the head', () => {
  const stores: SqliteStore[] = [];
  const removals: (() => Promise<void>)[] = [];
  const open = (dir?: string) => {
    const tmp = dir === undefined ? tempDir() : undefined;
    if (tmp) removals.push(tmp.remove);
    const store = new SqliteStore({ dataDir: dir ?? tmp!.dir });
    stores.push(store);
    return { store, dir: dir ?? tmp!.dir };
  };
  let log: ReturnType<typeof captureLogger>;
  beforeEach(() => {
    log = captureLogger();
  });
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close().catch(() => undefined);
    for (const remove of removals.splice(0)) await remove();
  });
  /**
   * Catches up from a source into a store that goes away at the first turn catchUp gives the loop, after
   * its first transaction, as in a crash (the next transaction fails); then opens the same data dir again.
   * Also a store that caught up from the source in one go, to compare with.
   */
  const crashAtFirstTurn = async (source: () => EventSource, options: Parameters<typeof catchUp>[3]) => {
    const reference = open().store;
    await catchUp(reference, source(), log.logger);
    const first = open();
    setImmediate(() => void first.store.close());
    await assert.rejects(catchUp(first.store, source(), log.logger, options));
    const again = open(first.dir).store;
    return { reference, again, cursor: (await again.getCursor('test:head'))?.cursor };
  };

  it('applies a head batch in short transactions, answering the loop between them, to the same result', async () => {
    const events = history(300);
    const whole = open().store;
    let turns = loopTurns();
    await catchUp(whole, headSource(events), log.logger);
    assert.equal(turns.stop(), 0, 'one transaction: catchUp never gave the loop a turn');

    const chunked = open().store;
    turns = loopTurns();
    const progress = await catchUp(chunked, headSource(events), log.logger, { headChunkEvents: 50 });
    const given = turns.stop();
    assert.ok(given >= Math.ceil(events.length / 50) - 1, `${given} turns for ${events.length} events`);
    assert.equal(progress.totals.applied, events.length);
    assert.equal(progress.totals.duplicate, 0);
    assert.equal((await chunked.getCursor('test:head'))?.cursor, 'end');
    assert.deepEqual(await shown(chunked), await shown(whole));
  });

  it('gives the loop back between head chunks for three times as long as each chunk held it', async () => {
    const events = history(300);
    const store = open().store;
    const spans = recordSpans(store);
    // Stands in for the requests waiting on the loop: a tenth of a millisecond of work, again at every turn.
    let otherMs = 0;
    let done = false;
    const request = () => {
      if (done) return;
      const started = performance.now();
      while (performance.now() - started < 0.1);
      otherMs += performance.now() - started;
      setImmediate(request);
    };
    setImmediate(request);
    const started = performance.now();
    await catchUp(store, headSource(events), log.logger, { headChunkEvents: 50 });
    done = true;
    const indexerMs = performance.now() - started - otherMs;
    assert.equal((await store.getCursor('test:head'))?.cursor, 'end');
    // Chunks of at most 50, cut between chain transactions, three times as long a wait after each but the
    // last. Waits as long as the chunk leave gaps of about the chunk's decoding and transaction, and fail this.
    assert.ok(spans.length >= 6, `${spans.length} transactions`);
    assertPausedBetween(spans, HEAD_PAUSE_FACTOR);
    // And the requests had the loop meanwhile: given only a turn between chunks, they had a tenth of a
    // millisecond per chunk, a few percent of the indexer's time.
    assert.ok(
      otherMs >= 0.3 * indexerMs,
      `requests ran ${otherMs.toFixed(1)} ms, the indexer ${indexerMs.toFixed(1)} ms`,
    );
  });

  it('catches up in chunks, the loop given back after each, while requests arrive; whole while none do', async () => {
    // Batches of two chunks' worth: each but the last has more behind it, and is caught up.
    const batchEvents = 2 * CATCH_UP_BUSY_CHUNK_EVENTS;
    const events = history(1200);
    const full = Math.floor(events.length / batchEvents);
    assert.ok(full >= 1 && events.length % batchEvents > 0, `${events.length} events`);
    // Fees that are not the contract's defaults, on an epoch the claims' stacks become claimable in: every
    // chunk prices as the whole batch does.
    const chain = {
      epoch: 10,
      parameters: { ...DEFAULT_PARAMETERS, sampling_consensus_charge_permille: 3000n },
    };
    const source = () => backlogSource(events, 100, chain);
    const whole = open().store;
    const wholeSpans = recordSpans(whole);
    await catchUp(whole, source(), log.logger, { batchEvents, busy: () => false });
    assert.equal(wholeSpans.length, full + 1, 'one transaction a batch while no request arrives');

    const chunked = open().store;
    const spans = recordSpans(chunked);
    const progress = await catchUp(chunked, source(), log.logger, { batchEvents, busy: () => true });
    assert.equal(progress.totals.applied, events.length);
    assert.equal(progress.totals.duplicate, 0);
    assert.equal((await chunked.getCursor('test:head'))?.cursor, String(events.length));
    assert.ok(spans.length >= 2 * full + 1, `${spans.length} transactions for ${events.length} events`);
    assertPausedBetween(spans, CATCH_UP_BUSY_PAUSE_FACTOR);
    assert.deepEqual(await shown(chunked), await shown(whole));
  });

  it('resumes a chunked catch-up exactly after the last transaction committed', async () => {
    const events = history(1200);
    // The first turn the loop gets is the pause after the first chunk.
    const options = { batchEvents: 2 * CATCH_UP_BUSY_CHUNK_EVENTS, busy: () => true };
    const { reference, again, cursor } = await crashAtFirstTurn(() => backlogSource(events), options);
    const saved = Number(cursor);
    assert.ok(saved >= 1 && saved <= CATCH_UP_BUSY_CHUNK_EVENTS, `the cursor past the first chunk: ${saved}`);
    const progress = await catchUp(again, backlogSource(events), log.logger, options);
    assert.equal(progress.totals.duplicate, 0, 'nothing was read twice');
    assert.equal(progress.totals.applied, events.length - saved);
    assert.deepEqual(await shown(again), await shown(reference));
  });

  it('stops between two chunks of a catch-up, and the next run goes on from the last one committed', async () => {
    const events = history(1200);
    const reference = open().store;
    await catchUp(reference, backlogSource(events), log.logger);

    const first = open();
    const stop = new AbortController();
    // The first turn the loop gets is the pause after the first chunk: the stop comes there.
    setImmediate(() => stop.abort());
    // A first batch of three chunks, with more behind it.
    const options = { batchEvents: 3 * CATCH_UP_BUSY_CHUNK_EVENTS, busy: () => true };
    assert.ok(events.length > options.batchEvents, `${events.length} events`);
    const stopped = await catchUp(first.store, backlogSource(events), log.logger, {
      ...options,
      signal: stop.signal,
    });
    const saved = Number((await first.store.getCursor('test:head'))?.cursor);
    assert.equal(stopped.cursor, String(saved));
    assert.ok(
      saved >= 1 && saved <= 2 * CATCH_UP_BUSY_CHUNK_EVENTS,
      `stopped after a chunk or two of a three-chunk batch: ${saved}`,
    );
    assert.equal(stopped.totals.applied, saved);
    const progress = await catchUp(first.store, backlogSource(events), log.logger, options);
    assert.equal(progress.totals.duplicate, 0, 'nothing was read twice');
    assert.equal(progress.totals.applied, events.length - saved);
    assert.deepEqual(await shown(first.store), await shown(reference));
  });

  it("never cuts between one transaction's events: a claim of three stacks stays one node event", async () => {
    // history(60): node 2 has stacks 1, 21 and 41. One transaction claims all three, and emits an event of
    // another module (skipped) between the first two claims.
    const events = history(60);
    const claim = (s: number, seq: number) =>
      event(
        'ClaimedStackEvent',
        {
          stack_small_id: inner(s),
          selected_node_id: inner(2),
          num_claimed_compute_units: '100',
          user_refund_amount: '1',
        },
        { tx: 'claim-of-three', seq },
      );
    const claims = [
      claim(1, 0),
      event('CoinMoved', {}, { tx: 'claim-of-three', seq: 1, module: 'coin' }),
      claim(21, 2),
      claim(41, 3),
    ];
    // A cut every 40 events would fall between the skipped event and the second claim.
    const batch = [...events.slice(0, 38), ...claims, ...events.slice(38)];
    const claimsOfNode2 = async (store: SqliteStore) =>
      (await store.listNodeEvents({ after: 0, limit: 10_000, nodes: [2], types: ['funds_claimed'] })).map(
        (e) => (JSON.parse(e.data) as { stack_small_ids: unknown[] }).stack_small_ids,
      );
    const whole = open().store;
    await catchUp(whole, headSource(batch), log.logger);
    // Events decoded by their source (the file source's) are cut by their transaction the same way.
    for (const form of ['raw', 'decoded'] as const) {
      const chunked = open().store;
      const turns = loopTurns();
      await catchUp(chunked, headSource(batch, form), log.logger, { headChunkEvents: 40 });
      assert.ok(turns.stop() >= 2, `${form}: the batch went in several transactions`);
      assert.deepEqual(await claimsOfNode2(chunked), [[1, 21, 41]], form);
      assert.deepEqual(await shown(chunked), await shown(whole), form);
    }
  });

  it('resumes exactly after a stop between two of its transactions, at the event after the last committed', async () => {
    const events = history(100);
    const { reference, again, cursor } = await crashAtFirstTurn(() => cursorSource(events), {
      headChunkEvents: 40,
    });
    const saved = Number(cursor);
    assert.ok(saved >= 1 && saved <= 40, `the cursor past the first transaction: ${saved}`);
    const progress = await catchUp(again, cursorSource(events), log.logger, { headChunkEvents: 40 });
    assert.equal(progress.totals.duplicate, 0, 'nothing was read twice');
    assert.equal(progress.totals.applied, events.length - saved);
    assert.deepEqual(await shown(again), await shown(reference));
  });

  it('resumes a source without a cursor for each event at its page: the applied ones are duplicates', async () => {
    const events = history(100);
    const { reference, again, cursor } = await crashAtFirstTurn(() => headSource(events), {
      headChunkEvents: 40,
    });
    assert.equal(cursor, null, 'the cursor stays before the batch');
    const progress = await catchUp(again, headSource(events), log.logger, { headChunkEvents: 40 });
    assert.ok(
      progress.totals.duplicate >= 1 && progress.totals.duplicate <= 40,
      `${progress.totals.duplicate}`,
    );
    assert.equal(progress.totals.applied + progress.totals.duplicate, events.length);
    assert.deepEqual(await shown(again), await shown(reference));
  });
});
