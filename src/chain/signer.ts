import { createPrivateKey, createPublicKey, generateKeyPairSync, sign } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { blake2b } from '@noble/hashes/blake2.js';

/** The signer's key file in the data directory, in the Sui keystore's entry form: base64(flag || secret). */
export const SIGNER_FILE = 'signer.key';
const ED25519_FLAG = 0;

export interface Signer {
  /** 0x + 64 hex: blake2b-256(flag || public key), as Sui derives addresses. */
  readonly address: string;
  readonly publicKey: Uint8Array;
  /** An Ed25519 signature of the message. */
  sign(message: Uint8Array): Uint8Array;
}

// PKCS#8 prefix of an Ed25519 private key (RFC 8410); the 32-byte secret follows it.
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');

/** An Ed25519 signer from a 32-byte secret. */
export function signerFromSecret(secret: Uint8Array): Signer {
  const privateKey = createPrivateKey({
    key: Buffer.concat([PKCS8_ED25519, secret]),
    format: 'der',
    type: 'pkcs8',
  });
  const publicKey = new Uint8Array(
    Buffer.from(String(createPublicKey(privateKey).export({ format: 'jwk' }).x), 'base64url'),
  );
  const address = `0x${Buffer.from(blake2b(new Uint8Array([ED25519_FLAG, ...publicKey]), { dkLen: 32 })).toString('hex')}`;
  return { address, publicKey, sign: (message) => new Uint8Array(sign(null, message, privateKey)) };
}

/** Loads the signer key from the data directory, creating it (mode 0600) on first start. */
export function loadOrCreateSigner(dataDir: string): { signer: Signer; created: boolean; file: string } {
  const file = join(dataDir, SIGNER_FILE);
  if (existsSync(file)) {
    const raw = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
    if (raw.length !== 33 || raw[0] !== ED25519_FLAG) {
      throw new Error(`${file} is not an Ed25519 key in Sui keystore form (base64 of flag 0 and 32 bytes)`);
    }
    return { signer: signerFromSecret(raw.subarray(1)), created: false, file };
  }
  const { privateKey } = generateKeyPairSync('ed25519');
  const secret = Buffer.from(String(privateKey.export({ format: 'jwk' }).d), 'base64url');
  writeFileSync(file, `${Buffer.concat([Buffer.from([ED25519_FLAG]), secret]).toString('base64')}\n`, {
    mode: 0o600,
    flag: 'wx',
  });
  return { signer: signerFromSecret(secret), created: true, file };
}
