import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { run } from './helpers/process.ts';

/**
 * The command line in its own words, through the real binary: argument errors of every command (the
 * daemon's own included), the daemon's hints as commands, a second start, a start on a taken port, an
 * interrupted start, a node that does not exist, a server that is not node-daemon.
 */

/** The one line a failed command wrote on stderr, without its `node-daemon: ` prefix. */
function oneLine(stderr: string): string {
  const lines = stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, `expected one line on stderr, got: ${stderr}`);
  assert.match(lines[0]!, /^node-daemon: /);
  return lines[0]!.slice('node-daemon: '.length);
}

describe("argument errors in the command line's own words, exit 2", () => {
  // Nothing listens at port 1: an argument error is found before anything is sent or opened.
  const env = { NODE_DAEMON_URL: 'http://127.0.0.1:1' };
  const cases: [string[], string][] = [
    // The daemon's own commands judged the same way as the client's (they used to answer in
    // node:util parseArgs' words: "Unknown option '--prot'. To specify a positional argument ...").
    [
      ['start', '--prot', '3105'],
      'unknown option --prot (did you mean --port?); see node-daemon start --help',
    ],
    [['start', '--port'], '--port needs a value: --port PORT; see node-daemon start --help'],
    [['start', '--demo=yes'], '--demo takes no value; got --demo=yes; see node-daemon start --help'],
    [
      ['start', '--no-dem'],
      'unknown option --no-dem (did you mean --no-demo?); see node-daemon start --help',
    ],
    [['start', '-3'], 'start takes no arguments (got -3); see node-daemon start --help'],
    [
      ['replay', '--prot', '3'],
      'unknown option --prot (did you mean --port?); see node-daemon replay --help',
    ],
    [
      ['token', 'rotate', '--data-dri', 'x'],
      'unknown option --data-dri (did you mean --data-dir?); see node-daemon token --help',
    ],
    [['--prot'], 'unknown option --prot (did you mean --port?); see node-daemon --help'],
    // A negative number is a value, answered about the value, never an unknown option.
    [
      ['subscribe', '2', '--price', '-5'],
      `--price cannot be negative: it must be an integer amount in USDC's smallest unit (1000000 is 1 USDC; at most 2^64 - 1) or an amount like 1.5usdc; got "-5"; see node-daemon subscribe --help`,
    ],
    [
      ['usage', '12', '-3'],
      'UNITS cannot be negative: it must be an integer from 0 to 2^64 - 1; got "-3"; see node-daemon usage --help',
    ],
    [['start', '--port', '-5'], 'invalid --port: "-5" is not accepted; expected an integer from 0 to 65535'],
  ];
  for (const [args, line] of cases) {
    it(args.join(' '), async () => {
      const result = await run(args, env);
      assert.equal(result.code, 2, result.stderr);
      assert.equal(result.stdout, '');
      assert.equal(oneLine(result.stderr), line);
    });
  }
});
