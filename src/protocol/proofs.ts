import { blake2b } from '@noble/hashes/blake2.js';
import { BYTES_PER_HASH_COMMITMENT as HASH_BYTES } from './constants.ts';

/**
 * Stack proofs, built as the contract checks them (contracts.md §2.6): a ticket holds 1 + k slots of 32
 * bytes, slot 0 for the settling node and slot i + 1 for the attester at index i, and the committed proof
 * must equal blake2b-256 of the slots concatenated. Every node that served (or re-ran) a stack's requests
 * holds the same running hash of them, so each computes its own slot's leaf, and the proof, from it.
 */

export const EMPTY_HASH: Uint8Array = new Uint8Array(HASH_BYTES);

const hash = (data: Uint8Array) => blake2b(data, { dkLen: HASH_BYTES });

/** blake2b-256 of a ticket's leaves vector: what the contract compares with the committed proof. */
export function hashLeaves(leaves: Uint8Array): Uint8Array {
  return hash(leaves);
}

/** The running hash after one more request: blake2b-256(previous || request hash). */
export function extendHash(total: Uint8Array, requestHash: Uint8Array): Uint8Array {
  const data = new Uint8Array(total.length + requestHash.length);
  data.set(total);
  data.set(requestHash, total.length);
  return hash(data);
}

/** The highest slot a leaf can be built for: its index is one byte (upstream-daemon.md, the leaf). */
export const MAX_LEAF_SLOT = 255;

/** The leaf of slot `slot` (0 = the settling node): blake2b-256(u8 slot || running hash). */
export function leafFor(total: Uint8Array, slot: number): Uint8Array {
  if (!Number.isInteger(slot) || slot < 0 || slot > 255)
    throw new RangeError(`slot ${slot} is outside 0..255`);
  const data = new Uint8Array(1 + total.length);
  data[0] = slot;
  data.set(total, 1);
  return hash(data);
}

/**
 * The committed proof of a ticket with k attester slots of which the first `filled` will hold a leaf:
 * blake2b-256(leaf 0 || leaf 1 || ... || leaf filled || zeros for the slots left empty). The contract hashes
 * all 1 + k slots, and a slot no attester fills stays zero, so the proof must say which will be filled.
 */
export function commitmentFor(total: Uint8Array, k: number, filled = k): Uint8Array {
  const slots = new Uint8Array(HASH_BYTES * (k + 1));
  const last = Math.min(Math.max(filled, 0), k);
  for (let slot = 0; slot <= last; slot++) slots.set(leafFor(total, slot), slot * HASH_BYTES);
  return hashLeaves(slots);
}

/**
 * How many attesters sample_attestation_nodes returns for k and `eligible` eligible subscribers
 * (contracts.md §2.6, db:2719-2739): all of them when fewer than k, else k draws (with replacement). When
 * the final check runs (every listed attester attested once), that is how many slots hold a leaf: the
 * attesters listed in distinct slots. A node drawn twice fills only its first slot, but then the
 * attestations never reach the final check unless that node attests twice (§2.7).
 */
export function expectedAttesters(k: number, eligible: number): number {
  return Math.min(k, eligible);
}

const utf8 = new TextEncoder();

/** A request hash for usage reported without one: blake2b-256 of the stack id, units and message index. */
export function syntheticRequestHash(stackSmallId: string, units: string, message: string): Uint8Array {
  return hash(utf8.encode(`usage:${stackSmallId}:${units}:${message}`));
}

/** A new ticket's leaves vector: the settler's leaf in slot 0, then `attesterSlots` zeroed slots. */
export function ticketLeaves(leaf: Uint8Array, attesterSlots: number): Uint8Array {
  const leaves = new Uint8Array(HASH_BYTES * (1 + attesterSlots));
  leaves.set(leaf.subarray(0, HASH_BYTES));
  return leaves;
}

/**
 * The leaves with the attester at `index` of requested_attestation_nodes in its slot, index + 1 (the
 * contract uses the attester's first index). The vector grows when it is too short for the slot.
 */
export function withAttesterLeaf(leaves: Uint8Array, index: number, leaf: Uint8Array): Uint8Array {
  const next = new Uint8Array(Math.max(leaves.length, HASH_BYTES * (index + 2)));
  next.set(leaves);
  next.fill(0, HASH_BYTES * (index + 1), HASH_BYTES * (index + 2));
  next.set(leaf.subarray(0, HASH_BYTES), HASH_BYTES * (index + 1));
  return next;
}
