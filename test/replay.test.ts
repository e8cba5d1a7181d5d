import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, it } from 'node:test';
import { SQLITE_FILE } from '../src/store/sqlite/sqlite-store.ts';
import { BIN, cleanEnv, ROOT, run, waitExit } from './helpers/process.ts';
import { history, jsonl } from './helpers/sui-events.ts';
import { tempDir } from './helpers/tmp.ts';

/** Every row of the read model, in key order: two stores are equal when their dumps are. */
function dump(dataDir: string): string {
  const db = new DatabaseSync(join(dataDir, SQLITE_FILE), { readOnly: true });
  const tables = [
    'tasks',
    'nodes',
    'node_models',
    'node_subscriptions',
    'stacks',
    'stack_settlement_tickets',
    'stack_attestation_disputes',
  ];
  const out = tables.map((t) =>
    JSON.stringify(db.prepare(`SELECT * FROM ${t} ORDER BY 1, 2`).all(), (_k, v) =>
      v instanceof Uint8Array ? [...v] : v,
    ),
  );
  db.close();
  return out.join('\n');
}

function cursorRow(dataDir: string): Record<string, unknown> | undefined {
  if (!existsSync(join(dataDir, SQLITE_FILE))) return undefined;
  try {
    const db = new DatabaseSync(join(dataDir, SQLITE_FILE), { readOnly: true });
    const row = db.prepare("SELECT * FROM indexer_cursors WHERE source LIKE 'file:%'").get();
    db.close();
    return row;
  } catch {
    return undefined;
  }
}

const SUMMARY =
  /^replayed (.+): (\d+) applied, (\d+) duplicate, (\d+) ignored, (\d+) unknown, (\d+) malformed, (\d+) orphaned/;

describe('node-daemon replay', () => {
  it('applies a file once: replaying it again, or a copy of it, changes nothing', async () => {
    const { dir, remove } = tempDir();
    const file = join(dir, 'events.jsonl');
    const events = history(300);
    writeFileSync(file, jsonl(events));
    const data = join(dir, 'data');
    const first = await run(['replay', file, '--data-dir', data]);
    assert.equal(first.code, 0, first.stderr);
    assert.equal(SUMMARY.exec(first.stdout)?.[2], String(events.length));
    const state = dump(data);
    const again = await run(['replay', file, '--data-dir', data]);
    assert.equal(again.code, 0);
    assert.match(again.stdout, /: 0 applied, 0 duplicate/);
    const copy = join(dir, 'copy.jsonl');
    copyFileSync(file, copy);
    const viaCopy = await run(['replay', copy, '--data-dir', data]);
    assert.match(viaCopy.stdout, new RegExp(`: 0 applied, ${events.length} duplicate`));
    assert.equal(dump(data), state);
    await remove();
  });

  it('refuses a missing file in one line', async () => {
    const result = await run(['replay', '/nonexistent/events.jsonl']);
    assert.equal(result.code, 2);
    assert.equal(result.stderr.trim(), 'node-daemon: cannot replay: no such file: /nonexistent/events.jsonl');
  });

  it('resumes exactly where it stopped after being killed mid-stream', async () => {
    const { dir, remove } = tempDir();
    const file = join(dir, 'events.jsonl');
    const events = history(40_000);
    writeFileSync(file, jsonl(events));

    const reference = join(dir, 'reference');
    assert.equal((await run(['replay', file, '--data-dir', reference])).code, 0);

    const crashed = join(dir, 'crashed');
    const child = spawn(process.execPath, [BIN, 'replay', file, '--data-dir', crashed], {
      env: cleanEnv(),
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = waitExit(child, 60_000);
    let killedAt: Record<string, unknown> | undefined;
    while (child.exitCode === null) {
      const row = cursorRow(crashed);
      if (row && Number(row.cursor) > 0) {
        child.kill('SIGKILL');
        killedAt = row;
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    const killed = await exited;
    assert.equal(
      killed.signal,
      'SIGKILL',
      'the replay finished before it could be killed; use a larger file',
    );
    assert.ok(Number(killedAt?.cursor) < events.length, 'killed mid-stream');

    const resumed = await run(['replay', file, '--data-dir', crashed]);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.equal(dump(crashed), dump(reference));
    const final = cursorRow(crashed);
    assert.equal(final?.applied, events.length, 'every event applied exactly once across both runs');
    assert.equal(final?.duplicate, 0);
    assert.equal(final?.cursor, String(events.length));
    await remove();
  });
});

describe('node-daemon replay interrupted', () => {
  it('stops between pages on SIGTERM, says so, and resumes on the next run', async () => {
    const { dir, remove } = tempDir();
    const file = join(dir, 'events.jsonl');
    const events = history(40_000);
    writeFileSync(file, jsonl(events));
    const data = join(dir, 'data');
    const child = spawn(process.execPath, [BIN, 'replay', file, '--data-dir', data], {
      env: cleanEnv(),
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = waitExit(child, 60_000);
    while (child.exitCode === null && !(Number(cursorRow(data)?.cursor) > 0)) {
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    child.kill('SIGTERM');
    const stopped = await exited;
    assert.equal(stopped.code, 130, stopped.stderr);
    assert.match(stopped.stdout, /^interrupted /);
    assert.match(stopped.stderr, /run the same command again to resume/);
    const resumed = await run(['replay', file, '--data-dir', data]);
    assert.equal(resumed.code, 0);
    assert.equal(cursorRow(data)?.applied, events.length);
    await remove();
  });
});
