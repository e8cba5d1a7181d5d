import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { decodeSuiPrivateKey } from '@mysten/sui/cryptography';
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519';
import { toBase64 } from '@mysten/sui/utils';

/** Writes a Sui CLI keystore of `count` fresh Ed25519 keys (base64 of flag and secret), and returns them. */
export function writeSuiKeystore(file: string, count = 1): Ed25519Keypair[] {
  const keys = Array.from({ length: count }, () => Ed25519Keypair.generate());
  const entries = keys.map((kp) =>
    toBase64(new Uint8Array([0, ...decodeSuiPrivateKey(kp.getSecretKey()).secretKey])),
  );
  writeFileSync(file, JSON.stringify(entries));
  return keys;
}

/** A loopback port nothing listens on: a fullnode that is not there. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Waits until `check` holds, failing the test after `ms`. */
export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  ms = 15_000,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    assert.ok(Date.now() < deadline, `timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
