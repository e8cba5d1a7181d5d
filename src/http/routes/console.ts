import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { extname, join, relative } from 'node:path';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { sendProblem } from '../errors.ts';

/**
 * The operator console (docs/CONSOLE.md): the page at / and its files under /console/, plain ES modules
 * and CSS from src/console/, served as they are (no build step). The files are read once at start, so a
 * request can only ever name one of them, and each answer carries a strong ETag, `no-cache` (the browser
 * revalidates, so an upgraded daemon never runs an old script) and a Content-Security-Policy that allows
 * nothing but this origin's scripts, styles and API.
 */

/** Where the console's files live (this file is src/http/routes/console.ts). */
export const CONSOLE_DIR = join(import.meta.dirname, '..', '..', 'console');

/** What the console's pages may do: load this origin's scripts, styles and images, and call its API. */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

/** The paths the console serves: public code that holds no data, open even under --auth all. */
export function isConsolePath(path: string): boolean {
  return path === '/' || path.startsWith('/console/');
}

/** Every servable file under dir, keyed by its path relative to it ('app.js', 'views/stacks.js'). */
function loadAssets(dir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  const walk = (at: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const file = join(at, entry.name);
      if (entry.isDirectory()) {
        walk(file);
        continue;
      }
      const type = TYPES[extname(entry.name)];
      if (!type) continue;
      const body = readFileSync(file);
      const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
      assets.set(relative(dir, file).split('\\').join('/'), { body, type, etag });
    }
  };
  walk(dir);
  return assets;
}

/** Whether the request's If-None-Match names this ETag (weak or strong, or `*`). */
function fresh(request: FastifyRequest, etag: string): boolean {
  const header = request.headers['if-none-match'];
  if (header === undefined) return false;
  return header.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t === etag || t === `W/${etag}`;
  });
}

function send(request: FastifyRequest, reply: FastifyReply, asset: Asset): FastifyReply {
  reply.headers({
    'content-security-policy': CONSOLE_CSP,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-resource-policy': 'same-origin',
    'cache-control': 'no-cache',
    etag: asset.etag,
  });
  if (fresh(request, asset.etag)) return reply.code(304).send();
  return reply.type(asset.type).send(asset.body);
}

/** GET / (the console's page) and GET /console/* (its scripts, styles and icon). */
export const consoleRoutes: FastifyPluginAsync<{ dir?: string }> = async (app, options) => {
  const assets = loadAssets(options.dir ?? CONSOLE_DIR);
  const page = assets.get('index.html');
  if (!page) throw new Error(`the console's index.html is missing from ${options.dir ?? CONSOLE_DIR}`);

  app.get('/', { schema: { hide: true } }, (request, reply) => send(request, reply, page));
  app.get<{ Params: { '*': string } }>('/console/*', { schema: { hide: true } }, (request, reply) => {
    const name = request.params['*'];
    const asset = name === 'index.html' ? undefined : assets.get(name);
    if (!asset) {
      return sendProblem(request, reply, 'not_found', `the console has no file ${name}; it starts at /`);
    }
    return send(request, reply, asset);
  });
};
