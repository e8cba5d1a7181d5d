import type { U64 } from '../internal/u64.ts';
import type { Writes } from './writes.ts';

/**
 * The operator's nodes: those configured (--node-small-ids, config.toml's node_small_ids), then the
 * signer's badges. `tolerant`: when the chain cannot list the badges, the configured ones alone.
 */
export async function ownNodes(
  configured: readonly U64[],
  writes: Pick<Writes, 'badges'> | undefined,
  tolerant: boolean,
): Promise<U64[]> {
  let badges: U64[] = [];
  try {
    badges = writes ? (await writes.badges()).map((b) => b.node_small_id) : [];
  } catch (error) {
    if (!tolerant) throw error;
  }
  return [...new Set([...configured, ...badges])];
}
