// @ts-check
import { h, svg, table } from './dom.js';
import { formatInt, formatUnits, formatUsdc, toBig } from './format.js';

/**
 * The claimed fees by epoch, as an SVG bar chart drawn here (no library), with the same figures as a
 * table for keyboards and screen readers. Bar heights are computed from the exact amounts.
 */

const EPOCHS = 16;
const WIDTH = 640;
const HEIGHT = 220;
const LEFT = 64;
const BOTTOM = 28;
const TOP = 12;

/**
 * A round ceiling for the axis: 1, 2 or 5 times a power of ten, at least `max`.
 * @param {bigint} max
 */
function niceTop(max) {
  if (max <= 0n) return 1_000_000n;
  let power = 1n;
  while (power * 10n <= max) power *= 10n;
  for (const step of [1n, 2n, 5n, 10n]) if (step * power >= max) return step * power;
  return 10n * power;
}

/**
 * USDC without the trailing zeros of its decimals, for axis labels: 0.5, 12, 0.0019.
 * @param {bigint} value
 */
function axisLabel(value) {
  return formatUnits(value, 6).replace(/\.0+$|(\.\d*?)0+$/, '$1');
}

/**
 * @param {{ epoch: number | bigint, claimed: number | bigint, stacks_claimed: number }[]} byEpoch
 * @param {number | bigint | null} currentEpoch
 */
export function claimedChart(byEpoch, currentEpoch) {
  const amounts = new Map(byEpoch.map((e) => [String(e.epoch), e]));
  const lastClaim = byEpoch.length > 0 ? BigInt(byEpoch[byEpoch.length - 1].epoch) : 0n;
  const now = toBig(currentEpoch) ?? 0n;
  const end = now > lastClaim ? now : lastClaim;
  const start = end >= BigInt(EPOCHS - 1) ? end - BigInt(EPOCHS - 1) : 0n;
  /** @type {{ epoch: bigint, claimed: bigint, stacks: number }[]} */
  const bars = [];
  for (let e = start; e <= end; e++) {
    const entry = amounts.get(String(e));
    bars.push({ epoch: e, claimed: entry ? BigInt(entry.claimed) : 0n, stacks: entry?.stacks_claimed ?? 0 });
  }
  const earlier = byEpoch.filter((e) => BigInt(e.epoch) < start);
  const earlierTotal = earlier.reduce((sum, e) => sum + BigInt(e.claimed), 0n);
  const max = bars.reduce((m, b) => (b.claimed > m ? b.claimed : m), 0n);
  const top = niceTop(max);
  const plotWidth = WIDTH - LEFT - 8;
  const plotHeight = HEIGHT - TOP - BOTTOM;
  const slot = plotWidth / bars.length;
  const barWidth = Math.max(2, Math.min(36, slot * 0.7));
  const labelEvery = Math.ceil(bars.length / 8);

  const grid = [0n, top / 2n, top].map((value) => {
    const y = TOP + plotHeight - (Number((value * 10_000n) / top) / 10_000) * plotHeight;
    return [
      svg('line', { class: 'grid', x1: LEFT, x2: WIDTH - 8, y1: y, y2: y }),
      svg('text', { class: 'axis', x: LEFT - 6, y: y + 4, 'text-anchor': 'end' }, axisLabel(value)),
    ];
  });
  const rects = bars.map((bar, i) => {
    const height = (Number((bar.claimed * 10_000n) / top) / 10_000) * plotHeight;
    const x = LEFT + i * slot + (slot - barWidth) / 2;
    const parts = [
      svg(
        'rect',
        {
          class: bar.claimed > 0n ? 'chart-bar' : 'chart-bar empty',
          x,
          y: TOP + plotHeight - Math.max(height, bar.claimed > 0n ? 1 : 0),
          width: barWidth,
          height: Math.max(height, bar.claimed > 0n ? 1 : 0),
        },
        svg(
          'title',
          {},
          `epoch ${bar.epoch}: ${formatUsdc(bar.claimed)} claimed, ${bar.stacks} ${bar.stacks === 1 ? 'stack' : 'stacks'}`,
        ),
      ),
    ];
    if (i % labelEvery === 0) {
      parts.push(
        svg(
          'text',
          { class: 'axis', x: x + barWidth / 2, y: HEIGHT - BOTTOM + 16, 'text-anchor': 'middle' },
          String(bar.epoch),
        ),
      );
    }
    return parts;
  });
  const chart = svg(
    'svg',
    {
      class: 'chart',
      viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
      role: 'img',
      'aria-label': `Claimed fees in epochs ${start} to ${end}; the largest is ${formatUsdc(max)}`,
    },
    ...grid.flat(),
    ...rects.flat(),
  );
  const withClaims = byEpoch.filter((e) => BigInt(e.claimed) > 0n || e.stacks_claimed > 0);
  return h(
    'figure',
    { class: 'chart-figure' },
    chart,
    h(
      'figcaption',
      null,
      `Node fees claimed in each epoch, in USDC, epochs ${start} to ${end}`,
      earlier.length > 0 ? ` (earlier epochs: ${formatUsdc(earlierTotal)})` : '',
      '.',
    ),
    h(
      'details',
      null,
      h('summary', null, 'As a table'),
      table({
        headers: ['Epoch', 'Claimed', 'Stacks'],
        rows: [...withClaims]
          .reverse()
          .map((e) => [String(e.epoch), formatUsdc(e.claimed), formatInt(e.stacks_claimed)]),
        empty: 'Nothing claimed yet.',
      }),
    ),
  );
}
