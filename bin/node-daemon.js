#!/usr/bin/env node
// The node-daemon command. In the clone the code is TypeScript run by Node's type stripping (Node >= 24);
// the installed package carries it as JavaScript in dist/ (built when it is packed), since Node strips no
// types under node_modules (docs/DECISIONS.md). When this file is started by an older Node (the system
// one), it re-runs itself on the Node 24 that npm installed with it (the `node` package, pinned in
// package.json).
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The clone has src/main.ts; the package has no TypeScript, only dist/.
const [code, ext] = existsSync(new URL('../src/main.ts', import.meta.url))
  ? ['../src', 'ts']
  : ['../dist', 'js'];

const major = Number(process.versions.node.split('.')[0]);
if (major >= 24) {
  const { main } = await import(`${code}/main.${ext}`);
  const { CliError } = await import(`${code}/internal/exit-codes.${ext}`);
  main(process.argv.slice(2), process.env).then(
    (exitCode) => process.exit(exitCode),
    (error) => {
      if (error instanceof CliError) {
        process.stderr.write(`node-daemon: ${error.message}\n`);
        process.exit(error.exitCode);
      }
      process.stderr.write(`node-daemon: unexpected error: ${error?.stack ?? String(error)}\n`);
      process.exit(1);
    },
  );
} else {
  const pinned = pinnedNode();
  if (pinned === undefined) {
    process.stderr.write(
      `node-daemon: needs Node.js 24 or newer (this is ${process.version}), and the pinned one is not installed: ` +
        `run "npm ci" in the checkout, or install the package again\n`,
    );
    process.exit(1);
  }
  // The Node options the daemon runs with (`npm start` passes the same; a test keeps the two equal), read
  // only here: a JSON import is still experimental on Node 20 and would print a warning on every command.
  const flags =
    process.argv[2] === 'start'
      ? JSON.parse(readFileSync(new URL('./daemon-node-flags.json', import.meta.url), 'utf8'))
      : [];
  const child = spawn(pinned, [...flags, fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 : 1)));
}

/**
 * The pinned Node's binary, wherever npm put the `node` package: beside this one in the clone and in a
 * global install, hoisted above it when the package is a project's dependency.
 */
function pinnedNode() {
  try {
    const file = join(dirname(createRequire(import.meta.url).resolve('node/package.json')), 'bin', 'node');
    return existsSync(file) ? file : undefined;
  } catch {
    return undefined;
  }
}
