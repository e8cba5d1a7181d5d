/** "Did you mean ...?" for a mistyped command or option: the nearest known name, if it is near enough. */

/**
 * The number of single-character edits (insert, delete, replace, or swap two neighbours) from a to b:
 * the optimal string alignment distance, so that a transposition like stakcs/stacks counts as one.
 */
export function editDistance(a: string, b: string): number {
  // rows[i][j] is the distance between the first i characters of a and the first j of b.
  const rows = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, rows[i - 2]![j - 2]! + 1);
      }
      rows[i]![j] = best;
    }
  }
  return rows[a.length]![b.length]!;
}

/**
 * The known name nearest to `word`, when it is plausibly a typo of it: within one edit per three
 * characters (at least one), else the only name that `word` begins (`--min` for `--min-fill`).
 */
export function nearest(word: string, known: readonly string[]): string | undefined {
  const typed = word.toLowerCase();
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const name of known) {
    const distance = editDistance(typed, name.toLowerCase());
    if (distance < bestDistance) {
      best = name;
      bestDistance = distance;
    }
  }
  if (best !== undefined && bestDistance <= Math.max(1, Math.floor(typed.length / 3))) return best;
  const extensions = typed.length >= 2 ? known.filter((name) => name.toLowerCase().startsWith(typed)) : [];
  return extensions.length === 1 ? extensions[0] : undefined;
}

/** " (did you mean X?)" with the nearest known name, or nothing. `prefix` goes before it (`--`). */
export function didYouMean(word: string, known: readonly string[], prefix = ''): string {
  const name = nearest(word, known);
  return name === undefined ? '' : ` (did you mean ${prefix}${name}?)`;
}
