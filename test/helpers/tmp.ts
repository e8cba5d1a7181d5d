import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A fresh temporary directory and the function that removes it. */
export function tempDir(prefix = 'node-daemon-test-'): { dir: string; remove: () => Promise<void> } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: async () => rmSync(dir, { recursive: true, force: true }) };
}
