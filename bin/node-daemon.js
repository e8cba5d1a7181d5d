#!/usr/bin/env node
// The node-daemon command. The code is TypeScript run by Node's type stripping (Node >= 24). When this
// file is started by an older Node (the system one), it re-runs itself on the Node 24 that `npm ci`
// installed into node_modules (the `node` package pinned in package.json).
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const major = Number(process.versions.node.split('.')[0]);
if (major >= 24) {
  const { main } = await import('../src/main.ts');
  const { CliError } = await import('../src/internal/exit-codes.ts');
  main(process.argv.slice(2), process.env).then(
    (code) => process.exit(code),
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
  const pinned = fileURLToPath(new URL('../node_modules/node/bin/node', import.meta.url));
  if (!existsSync(pinned)) {
    process.stderr.write(
      `node-daemon: needs Node.js 24 or newer (this is ${process.version}); run "npm ci" in the checkout to install it\n`,
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
