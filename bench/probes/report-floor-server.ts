// The floor under a usage report (report-probe.ts --floor): the one store call the daemon makes for a
// report (SqliteStore.addStackUsage, on a SQLite file of its own with 50 stacks of node 1), served through
// bare node:http or through a plain Fastify route, with nothing else: no hooks, no schema, no token, no
// metrics, no idempotency, no logger. What the daemon spends beyond these is its own request handling.
//
//   node bench/probes/report-floor-server.ts bare|fastify PORT DIR UNITS
// GET / answers 200 once the stacks exist (each with UNITS compute units); POST /stacks/{id}/usage with
// {"compute_units": n} records n units and answers the outcome as JSON.
import { createServer } from 'node:http';
import Fastify from 'fastify';
import { SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';
import { seedNodeStacks } from './seed.ts';

const [kind, portText, dir, unitsText] = process.argv.slice(2);
if ((kind !== 'bare' && kind !== 'fastify') || !portText || !dir || !unitsText) {
  process.stderr.write('usage: node bench/probes/report-floor-server.ts bare|fastify PORT DIR UNITS\n');
  process.exit(2);
}
const port = Number(portText);
const NODE = 1;
const store = new SqliteStore({ dataDir: dir });
await seedNodeStacks(store, 50, { node: NODE, units: Number(unitsText), price: 1_000_000, model: 'floor' });

/** The report, as the daemon records one without a request hash, for a signer that owns node 1. */
async function record(id: number, units: number): Promise<string> {
  const outcome = await store.addStackUsage(id, units, undefined, Date.now(), [NODE]);
  return JSON.stringify({ stack_small_id: id, ...outcome });
}

const usagePath = /^\/stacks\/(\d+)\/usage$/;
/** Stops accepting and closes the store: bench/servers.ts expects exit 0 on SIGTERM. */
let close: () => Promise<void>;
if (kind === 'bare') {
  const server = createServer((request, response) => {
    const match = usagePath.exec(request.url ?? '');
    if (request.method !== 'POST' || !match) {
      response.writeHead(200, { 'content-length': 0 }).end();
      return;
    }
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', async () => {
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { compute_units: number };
      const text = await record(Number(match[1]), body.compute_units);
      response.writeHead(200, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(text),
      });
      response.end(text);
    });
  }).listen(port, '127.0.0.1');
  close = () => new Promise((resolve) => server.close(() => resolve()));
} else {
  const app = Fastify();
  app.get('/', async () => ({}));
  app.post('/stacks/:id/usage', async (request, reply) => {
    const { id } = request.params as { id: string };
    const body = request.body as { compute_units: number };
    reply.type('application/json; charset=utf-8');
    return record(Number(id), body.compute_units);
  });
  await app.listen({ port, host: '127.0.0.1' });
  close = () => app.close();
}
process.once('SIGTERM', async () => {
  await close();
  await store.close();
  process.exit(0);
});
