import { setFlagsFromString } from 'node:v8';

/**
 * Turns off V8's allocation-site pretenuring for this process (the daemon's; `start` calls it first).
 *
 * V8 watches how many of the objects made at each allocation site (an object or array literal, a `new`)
 * outlive a young-generation collection. Above 85 % it decides to make that site's objects in the old
 * generation from then on, for the life of the process. While the indexer catches up, many sites in
 * node:http, Fastify and the daemon pass that mark, because a page's objects live across collections.
 * Afterwards a request's objects made at those sites die with the request but stay until the next full
 * collection, and keep alive every young object they point to; those are copied, then promoted, and keep
 * their own young objects alive in turn. Under 50 readers about 8 MB were copied and promoted at every
 * scavenge and each one paused the event loop for 12 to 30 ms; with this off, 0.2 MB and about 1 ms.
 * The cost: the indexer's own catch-up spends about 5 % more CPU (docs/DECISIONS.md).
 */
export function keepRequestsYoung(): void {
  setFlagsFromString('--no-allocation-site-pretenuring');
}
