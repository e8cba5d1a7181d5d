import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FailureLog } from '../src/internal/failure-log.ts';
import { captureLogger } from './helpers/capture-log.ts';

describe('FailureLog', () => {
  it('says a failure once per reason, the repeats at debug, and once that it stopped', () => {
    const log = captureLogger();
    const failures = new FailureLog(log.logger);
    failures.recovered({}, 'works again');
    for (let i = 0; i < 5; i++) failures.failed('refused', 'warn', { i }, 'it failed: refused');
    failures.failed('timed out', 'error', {}, 'it failed: timed out');
    failures.failed('timed out', 'error', {}, 'it failed: timed out');
    assert.equal(failures.failing, true);
    failures.recovered({}, 'works again');
    failures.recovered({}, 'works again');
    failures.failed('timed out', 'error', {}, 'it failed: timed out');
    failures.clear();
    failures.recovered({}, 'works again');
    assert.deepEqual(
      log.lines().map((l) => [l.level, l.msg]),
      [
        [40, 'it failed: refused'],
        [20, 'it failed: refused'],
        [20, 'it failed: refused'],
        [20, 'it failed: refused'],
        [20, 'it failed: refused'],
        [50, 'it failed: timed out'],
        [20, 'it failed: timed out'],
        [30, 'works again'],
        [50, 'it failed: timed out'],
      ],
    );
  });
});
