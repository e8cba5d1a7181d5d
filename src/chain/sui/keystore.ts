import { readFileSync } from 'node:fs';
import { decodeSuiPrivateKey, SIGNATURE_FLAG_TO_SCHEME } from '@mysten/sui/cryptography';
import { Ed25519Keypair } from '@mysten/sui/keypairs/ed25519';
import { Secp256k1Keypair } from '@mysten/sui/keypairs/secp256k1';
import { Secp256r1Keypair } from '@mysten/sui/keypairs/secp256r1';
import { fromBase64, normalizeSuiAddress } from '@mysten/sui/utils';

/**
 * The Sui CLI keystore (~/.sui/sui_config/sui.keystore): a JSON array whose entries are either
 * base64(flag || 32-byte secret) (the CLI's own form; very old files hold flag || secret || public key, 65
 * bytes) or a bech32 `suiprivkey1…` string (SIP-15, what `sui keytool export` prints). Only Ed25519 keys can
 * sign for the daemon. No error message ever contains key material.
 */

/** A keystore problem, in one line, safe to print (it never holds key material). */
export class KeystoreError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeystoreError';
  }
}

export interface KeystoreSigner {
  keypair: Ed25519Keypair;
  /** 0x + 64 lower-case hex digits. */
  address: string;
}

interface Entry {
  /** ED25519, Secp256k1, Secp256r1, MultiSig, ZkLogin, Passkey, or "unknown flag N". */
  scheme: string;
  secret: Uint8Array;
  /** The public key an old 65-byte entry carries, checked against the secret. */
  publicKey?: Uint8Array;
}

const ADDRESS = /^0x[0-9a-fA-F]{1,64}$/;

/** Loads the keystore and picks the signing key: `address` when given, else the first entry. */
export function loadKeystore(path: string, address?: string): KeystoreSigner {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new KeystoreError(`Sui keystore ${path} does not exist`);
    if (code === 'EISDIR') throw new KeystoreError(`Sui keystore ${path} is a directory, not a file`);
    throw new KeystoreError(`cannot read the Sui keystore ${path}: ${code ?? (error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new KeystoreError(
      `Sui keystore ${path} is not JSON (expected an array of keys, as sui.keystore holds)`,
    );
  }
  if (!Array.isArray(json)) {
    throw new KeystoreError(`Sui keystore ${path} is not a JSON array of keys`);
  }
  if (json.length === 0) throw new KeystoreError(`Sui keystore ${path} has no keys`);
  const entries = json.map((value, i) => {
    const entry = parseEntry(value);
    if (!entry) {
      throw new KeystoreError(
        `Sui keystore ${path}: entry ${i + 1} is not a Sui private key (base64 of flag and 32 bytes, or suiprivkey1...)`,
      );
    }
    return entry;
  });

  let index = 0;
  if (address !== undefined) {
    if (!ADDRESS.test(address)) {
      throw new KeystoreError(`Sui address "${address}" is not an address (0x and 1 to 64 hex digits)`);
    }
    const wanted = normalizeSuiAddress(address);
    index = entries.findIndex((entry) => addressOf(entry) === wanted);
    if (index < 0) {
      const n = entries.length;
      throw new KeystoreError(
        `Sui address ${wanted} is not in the keystore ${path} (it holds ${n} address${n === 1 ? '' : 'es'})`,
      );
    }
  }
  const entry = entries[index]!;
  if (entry.scheme !== 'ED25519') {
    const which =
      address === undefined ? `the first key of ${path}` : `the key of ${addressOf(entry) ?? address}`;
    throw new KeystoreError(
      `${which} uses the ${entry.scheme} signature scheme; only ED25519 keys are supported (choose another address)`,
    );
  }
  const keypair = Ed25519Keypair.fromSecretKey(entry.secret);
  if (entry.publicKey && !sameBytes(entry.publicKey, keypair.getPublicKey().toRawBytes())) {
    throw new KeystoreError(
      `Sui keystore ${path}: entry ${index + 1} is corrupt (its public key does not match its secret)`,
    );
  }
  return { keypair, address: keypair.toSuiAddress() };
}

function parseEntry(value: unknown): Entry | undefined {
  if (typeof value !== 'string') return undefined;
  const text = value.trim();
  if (text.startsWith('suiprivkey')) {
    try {
      const { scheme, secretKey } = decodeSuiPrivateKey(text);
      if (secretKey.length !== 32) return undefined;
      return { scheme: scheme ?? 'unknown', secret: secretKey };
    } catch {
      return undefined;
    }
  }
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return undefined;
  const raw = fromBase64(text);
  if (raw.length !== 33 && raw.length !== 65) return undefined;
  const flag = raw[0]!;
  const scheme: string =
    SIGNATURE_FLAG_TO_SCHEME[flag as keyof typeof SIGNATURE_FLAG_TO_SCHEME] ?? `unknown (flag ${flag})`;
  const entry: Entry = { scheme, secret: raw.slice(1, 33) };
  if (raw.length === 65) entry.publicKey = raw.slice(33);
  return entry;
}

/** The address a key signs for; undefined for schemes that hold no private key of their own. */
function addressOf(entry: Entry): string | undefined {
  try {
    switch (entry.scheme) {
      case 'ED25519':
        return Ed25519Keypair.fromSecretKey(entry.secret).toSuiAddress();
      case 'Secp256k1':
        return Secp256k1Keypair.fromSecretKey(entry.secret).toSuiAddress();
      case 'Secp256r1':
        return Secp256r1Keypair.fromSecretKey(entry.secret).toSuiAddress();
      default:
        return undefined;
    }
  } catch {
    return undefined;
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
