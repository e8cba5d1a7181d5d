import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ROOT } from './process.ts';

/** The compose overlay that joins atoma-node's stack (docs/DEPLOY.md). */
export const OVERLAY = join(ROOT, 'deploy', 'compose', 'docker-compose.node-daemon.yaml');

export interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  networks?: string[];
  depends_on?: Record<string, { condition: string }>;
  read_only?: boolean;
  tmpfs?: string[];
  cap_drop?: string[];
  security_opt?: string[];
  stop_grace_period?: string;
}

export interface ComposeFile {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
  networks?: Record<string, unknown>;
}

export function readOverlay(): ComposeFile {
  return parse(readFileSync(OVERLAY, 'utf8')) as ComposeFile;
}

/** Compose's `${NAME:-default}` and `${NAME}`, as compose fills them from an environment. */
export function interpolate(text: string, env: Record<string, string> = {}): string {
  return text.replace(/\$\{([A-Z0-9_]+)(?::-([^}]*))?\}/g, (_, name: string, fallback?: string) =>
    env[name] !== undefined && env[name] !== '' ? env[name] : (fallback ?? ''),
  );
}
