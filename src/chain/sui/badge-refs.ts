import type { SuiClientTypes } from '@mysten/sui/client';
import { normalizeStructTag, normalizeSuiAddress, normalizeSuiObjectId } from '@mysten/sui/utils';
import { toU64, type U64 } from '../../internal/u64.ts';
import { type Badge, ChainRejectedError } from '../chain.ts';
import type { ObjectRef } from './gas-coins.ts';
import type { OwnedChange } from './proto-json.ts';

/** A NodeBadge the signer owns, at the version its last transaction left it. */
export interface BadgeRef extends ObjectRef {
  node_small_id: U64;
}

const OBJECT_ID = /^0x[0-9a-fA-F]{1,64}$/;

/**
 * The signer's NodeBadges at their current versions: read once from the fullnode, then followed through each
 * transaction's effects (a new version, a deletion, a badge a registration minted), so back-to-back
 * transactions never name a version that is gone. The gas coins are followed the same way (gas-coins.ts).
 */
export class BadgeRefs {
  readonly #owner: string;
  readonly #readObject: (
    id: string,
    what: string,
  ) => Promise<SuiClientTypes.Object<{ json: true }> | undefined>;
  readonly #refs = new Map<string, BadgeRef>();

  constructor(
    owner: string,
    readObject: (id: string, what: string) => Promise<SuiClientTypes.Object<{ json: true }> | undefined>,
  ) {
    this.#owner = owner;
    this.#readObject = readObject;
  }

  /** Keeps refs listed outside the submission lock, unless the last transaction left a newer version. */
  keep(listed: readonly BadgeRef[]): void {
    for (const badge of listed) {
      const known = this.#refs.get(badge.objectId);
      if (!known || BigInt(known.version) < BigInt(badge.version)) this.#refs.set(badge.objectId, badge);
    }
  }

  /** The badge at its current version; refused unless the signer owns it with that node id. */
  async ref(badge: Badge, typePackage: string): Promise<BadgeRef> {
    const wanted =
      typeof badge?.badge_id === 'string' && OBJECT_ID.test(badge.badge_id)
        ? normalizeSuiObjectId(badge.badge_id)
        : undefined;
    const notOwned = () =>
      new ChainRejectedError(
        'badge_not_owned',
        `NodeBadge ${String(badge?.badge_id)} of node ${String(badge?.node_small_id)} is not owned by ${this.#owner}`,
      );
    if (!wanted) throw notOwned();
    const smallId = toU64(badge.node_small_id);
    const known = this.#refs.get(wanted);
    if (known) {
      if (smallId === undefined || BigInt(known.node_small_id) !== BigInt(smallId)) throw notOwned();
      return known;
    }
    const object = await this.#readObject(wanted, 'read the NodeBadge');
    const json = object?.json as { small_id?: { inner?: unknown } } | null | undefined;
    const inner = toU64(json?.small_id?.inner);
    if (
      object?.owner.$kind !== 'AddressOwner' ||
      normalizeSuiAddress(object.owner.AddressOwner) !== this.#owner ||
      object.type !== normalizeStructTag(`${typePackage}::db::NodeBadge`) ||
      inner === undefined ||
      smallId === undefined ||
      BigInt(inner) !== BigInt(smallId)
    ) {
      throw notOwned();
    }
    const ref: BadgeRef = {
      objectId: wanted,
      version: object.version,
      digest: object.digest,
      node_small_id: inner,
    };
    this.#refs.set(wanted, ref);
    return ref;
  }

  /** Follows a transaction's owned changes; a NodeRegisteredEvent among its events names a new badge. */
  follow(changes: readonly OwnedChange[], events: readonly unknown[]): void {
    const registered = new Map<string, U64>();
    for (const event of events as {
      type?: string;
      parsedJson?: { badge_id?: string; node_small_id?: { inner?: unknown } };
    }[]) {
      const smallId = toU64(event.parsedJson?.node_small_id?.inner);
      if (
        event.type?.endsWith('::db::NodeRegisteredEvent') &&
        event.parsedJson?.badge_id &&
        smallId !== undefined
      ) {
        registered.set(normalizeSuiObjectId(event.parsedJson.badge_id), smallId);
      }
    }
    for (const { objectId, ref } of changes) {
      if (!ref) {
        this.#refs.delete(objectId);
        continue;
      }
      const badge = this.#refs.get(objectId);
      if (badge) this.#refs.set(objectId, { ...badge, ...ref });
      const smallId = registered.get(objectId);
      if (smallId !== undefined) this.#refs.set(objectId, { ...ref, node_small_id: smallId });
    }
  }

  forget(): void {
    this.#refs.clear();
  }
}
