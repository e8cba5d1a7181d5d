/** Capped exponential back-off with full jitter: never a hot loop, never a thundering herd. */
export function backoffDelay(attempt: number, baseMs = 250, capMs = 30_000, random = Math.random): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 30));
  return Math.max(baseMs / 2, Math.floor(random() * ceiling));
}
