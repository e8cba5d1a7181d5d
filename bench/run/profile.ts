import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

/** Summaries of a V8 .cpuprofile (as written by node --cpu-prof): where the samples fell. */

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
}

export interface ProfileLine {
  name: string;
  ms: number;
  percent: number;
}

export interface ProfileSummary {
  file: string;
  totalMs: number;
  /** Busy time: everything but (idle). */
  busyMs: number;
  self: ProfileLine[];
  inclusive: ProfileLine[];
  byArea: ProfileLine[];
}

function area(url: string, name: string): string {
  if (name === '(garbage collector)') return 'garbage collection';
  if (name === '(program)' || name === '(root)') return 'V8/native (program)';
  if (url === '') return 'native';
  if (url.includes('/node_modules/fastify/') || url.includes('/node_modules/@fastify/')) return 'fastify';
  if (url.includes('/node_modules/fast-json-stringify/')) return 'fast-json-stringify';
  if (url.includes('/node_modules/')) {
    const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
    return m ? m[1]! : 'node_modules';
  }
  if (url.startsWith('node:')) return 'node core';
  if (url.includes('/src/')) return `daemon ${url.slice(url.indexOf('/src/') + 1)}`;
  return url;
}

export function summarizeProfile(file: string, root: string, top = 15): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const totalMs = (profile.endTime - profile.startTime) / 1000;
  const totalSamples = profile.samples.length || 1;
  const msPerSample = totalMs / totalSamples;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const label = (n: ProfileNode) => {
    const { functionName, url, lineNumber } = n.callFrame;
    const where =
      url === ''
        ? ''
        : ` ${url.startsWith('file://') ? relative(root, new URL(url).pathname) : url}:${lineNumber + 1}`;
    return `${functionName || '(anonymous)'}${where}`;
  };
  const self = new Map<string, number>();
  const areas = new Map<string, number>();
  let idle = 0;
  for (const n of profile.nodes) {
    const hits = n.hitCount ?? 0;
    if (hits === 0) continue;
    if (n.callFrame.functionName === '(idle)') {
      idle += hits;
      continue;
    }
    self.set(label(n), (self.get(label(n)) ?? 0) + hits);
    const a = area(n.callFrame.url, n.callFrame.functionName);
    areas.set(a, (areas.get(a) ?? 0) + hits);
  }
  // Inclusive hits, counted once per function per stack (recursion is not double counted).
  const inclusive = new Map<string, number>();
  const root0 = profile.nodes[0];
  const walk = (n: ProfileNode, onStack: Set<string>): number => {
    let hits = n.hitCount ?? 0;
    const name = label(n);
    const added = !onStack.has(name);
    if (added) onStack.add(name);
    for (const c of n.children ?? []) {
      const child = byId.get(c);
      if (child) hits += walk(child, onStack);
    }
    if (added) {
      onStack.delete(name);
      inclusive.set(name, (inclusive.get(name) ?? 0) + hits);
    }
    return hits;
  };
  if (root0) walk(root0, new Set());
  const busySamples = totalSamples - idle;
  const lines = (m: Map<string, number>, skip: (name: string) => boolean = () => false) =>
    [...m.entries()]
      .filter(([name]) => !skip(name))
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, hits]) => ({
        name,
        ms: Math.round(hits * msPerSample),
        percent: Math.round((1000 * hits) / Math.max(1, busySamples)) / 10,
      }));
  return {
    file,
    totalMs: Math.round(totalMs),
    busyMs: Math.round(busySamples * msPerSample),
    self: lines(self),
    inclusive: lines(inclusive, (name) => /^\((root|program|idle)\)/.test(name)),
    byArea: lines(areas),
  };
}

export function formatProfile(s: ProfileSummary): string {
  const block = (title: string, rows: ProfileLine[]) =>
    [
      `  ${title}`,
      ...rows.map((r) => `    ${String(r.percent).padStart(5)}%  ${String(r.ms).padStart(7)} ms  ${r.name}`),
    ].join('\n');
  return [
    `profile ${s.file}: ${s.busyMs} ms busy of ${s.totalMs} ms (percentages of busy time)`,
    block('by area (self time)', s.byArea),
    block('top functions, self time', s.self),
    block('top functions, inclusive time', s.inclusive),
  ].join('\n');
}
