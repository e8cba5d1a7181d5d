import { blake2b } from '@noble/hashes/blake2.js';

/**
 * Stack proofs, built as the contract checks them (contracts.md §2.6): a ticket holds 1 + k slots of 32
 * bytes, slot 0 for the settling node and slot i + 1 for the attester at index i, and the committed proof
 * must equal blake2b-256 of the slots concatenated. Every node that served (or re-ran) a stack's requests
 * holds the same running hash of them, so each computes its own slot's leaf, and the proof, from it.
 */

export const HASH_BYTES = 32;
export const EMPTY_HASH: Uint8Array = new Uint8Array(HASH_BYTES);

const hash = (data: Uint8Array) => blake2b(data, { dkLen: HASH_BYTES });

/** The running hash after one more request: blake2b-256(previous || request hash). */
export function extendHash(total: Uint8Array, requestHash: Uint8Array): Uint8Array {
  const data = new Uint8Array(total.length + requestHash.length);
  data.set(total);
  data.set(requestHash, total.length);
  return hash(data);
}

/** The leaf of slot `slot` (0 = the settling node): blake2b-256(u8 slot || running hash). */
export function leafFor(total: Uint8Array, slot: number): Uint8Array {
  if (!Number.isInteger(slot) || slot < 0 || slot > 255)
    throw new RangeError(`slot ${slot} is outside 0..255`);
  const data = new Uint8Array(1 + total.length);
  data[0] = slot;
  data.set(total, 1);
  return hash(data);
}

/** The committed proof for k attester slots: blake2b-256(leaf 0 || leaf 1 || ... || leaf k). */
export function commitmentFor(total: Uint8Array, k: number): Uint8Array {
  const slots = new Uint8Array(HASH_BYTES * (k + 1));
  for (let slot = 0; slot <= k; slot++) slots.set(leafFor(total, slot), slot * HASH_BYTES);
  return hash(slots);
}

/** A request hash for usage reported without one: blake2b-256 of the stack id, units and message index. */
export function syntheticRequestHash(stackSmallId: string, units: string, message: string): Uint8Array {
  return hash(new TextEncoder().encode(`usage:${stackSmallId}:${units}:${message}`));
}
