/** Durations as the command line takes them: `90s`, `10m`, `12h`, `30d` (or plain seconds). */

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** The duration in milliseconds, or undefined when the text is none. */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d{1,9})\s*([smhd]?)$/.exec(text.trim());
  if (!match) return undefined;
  return Number(match[1]) * UNITS[match[2] || 's']!;
}
