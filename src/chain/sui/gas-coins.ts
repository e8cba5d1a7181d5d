import type { SuiClientTypes } from '@mysten/sui/client';
import type { GrpcTypes } from '@mysten/sui/grpc';
import { normalizeSuiObjectId } from '@mysten/sui/utils';
import { ChainRejectedError } from '../chain.ts';
import type { OwnedChange } from './proto-json.ts';

/**
 * The signer's SUI coins, which pay gas: listed once from the fullnode, then followed through each
 * transaction's effects (the coin that paid keeps what is left, merged coins are gone), so that
 * back-to-back transactions pay with current refs. Listed again when a payment cannot be found among them,
 * and after forget().
 */

export interface ObjectRef {
  objectId: string;
  version: string;
  digest: string;
}

export interface CoinRef extends ObjectRef {
  balance: bigint;
}

/** Sui's limit on the gas coins of one transaction. */
const MAX_GAS_COINS = 255;
/** The most coins listed: the largest of these pay. */
const MAX_LISTED = 1000;
const OBJECT_ID = /^0x[0-9a-fA-F]{1,64}$/;

export class GasCoins {
  readonly #owner: string;
  readonly #cap: bigint;
  readonly #listPage: (cursor: string | null) => Promise<SuiClientTypes.ListCoinsResponse>;
  #coins: Map<string, CoinRef> | undefined;

  /** listPage reads one page of the owner's SUI coins (the caller gives it a deadline and its errors). */
  constructor(init: {
    owner: string;
    cap: bigint;
    listPage: (cursor: string | null) => Promise<SuiClientTypes.ListCoinsResponse>;
  }) {
    this.#owner = init.owner;
    this.#cap = init.cap;
    this.#listPage = init.listPage;
  }

  /** Forgets the coins: another client of the address may have used them. */
  forget(): void {
    this.#coins = undefined;
  }

  /**
   * The coins that pay: the named one (which must be the signer's SUI coin), else the signer's largest
   * coins until they cover `budget` (all of them, up to Sui's limit, when budget is undefined).
   */
  async payment(budget: bigint | undefined, coinId: string | undefined): Promise<CoinRef[]> {
    if (coinId !== undefined) {
      const coin = await this.#named(coinId);
      if (budget !== undefined && coin.balance < budget) {
        throw new ChainRejectedError(
          'insufficient_gas',
          `gas coin ${coin.objectId} holds ${coin.balance} MIST, less than the gas budget of ${budget} MIST`,
        );
      }
      return [coin];
    }
    for (let fresh = false; ; fresh = true) {
      const coins = [...(await this.#list(fresh)).values()].sort((a, b) =>
        a.balance === b.balance ? 0 : a.balance > b.balance ? -1 : 1,
      );
      if (coins.length === 0) {
        if (!fresh) continue;
        throw new ChainRejectedError(
          'no_gas_coin',
          `the signer ${this.#owner} owns no SUI coin to pay gas; send it SUI (on testnet: the faucet) and retry`,
        );
      }
      const chosen: CoinRef[] = [];
      let sum = 0n;
      for (const coin of coins.slice(0, MAX_GAS_COINS)) {
        chosen.push(coin);
        sum += coin.balance;
        if (budget !== undefined ? sum >= budget : sum >= this.#cap) break;
      }
      if (budget === undefined || sum >= budget) return chosen;
      if (!fresh) continue;
      throw new ChainRejectedError(
        'insufficient_gas',
        `the SUI coins of ${this.#owner} hold ${sum} MIST, less than the gas budget of ${budget} MIST; fund the address`,
      );
    }
  }

  /**
   * Follows the coins through a transaction's effects: the first payment coin keeps what the payment held
   * less the net gas, a coin the signer no longer owns (merged, or given away) is dropped.
   */
  follow(changes: OwnedChange[], payment: CoinRef[], gasUsed: GrpcTypes.GasCostSummary | undefined): void {
    const coins = this.#coins;
    if (!coins) return;
    const net =
      (gasUsed?.computationCost ?? 0n) + (gasUsed?.storageCost ?? 0n) - (gasUsed?.storageRebate ?? 0n);
    const left = payment.reduce((sum, coin) => sum + coin.balance, 0n) - net;
    const paid = left > 0n ? left : 0n;
    const gasCoin = payment[0]?.objectId;
    for (const { objectId, ref } of changes) {
      if (!ref) {
        coins.delete(objectId);
        continue;
      }
      const coin = coins.get(objectId);
      if (coin) coins.set(objectId, { ...ref, balance: objectId === gasCoin ? paid : coin.balance });
      else if (objectId === gasCoin) coins.set(objectId, { ...ref, balance: paid });
    }
  }

  async #named(coinId: string): Promise<CoinRef> {
    const id =
      typeof coinId === 'string' && OBJECT_ID.test(coinId) ? normalizeSuiObjectId(coinId) : undefined;
    const notOwned = () =>
      new ChainRejectedError(
        'gas_coin_not_owned',
        `gas coin ${String(coinId)} is not a SUI coin of ${this.#owner}`,
      );
    if (!id) throw notOwned();
    const known = (await this.#list(false)).get(id) ?? (await this.#list(true)).get(id);
    if (!known) throw notOwned();
    return known;
  }

  /** The signer's SUI coins, listed once and then followed through effects. */
  async #list(refresh: boolean): Promise<Map<string, CoinRef>> {
    if (this.#coins && !refresh) return this.#coins;
    const coins = new Map<string, CoinRef>();
    let cursor: string | null = null;
    do {
      const page: SuiClientTypes.ListCoinsResponse = await this.#listPage(cursor);
      for (const coin of page.objects) {
        const id = normalizeSuiObjectId(coin.objectId);
        coins.set(id, {
          objectId: id,
          version: coin.version,
          digest: coin.digest,
          balance: BigInt(coin.balance),
        });
      }
      cursor = page.hasNextPage ? page.cursor : null;
    } while (cursor && coins.size < MAX_LISTED);
    this.#coins = coins;
    return coins;
  }
}
