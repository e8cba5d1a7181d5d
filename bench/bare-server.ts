import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

/**
 * The bare baseline: a plain node:http server that answers every request with the same bytes (the body the
 * daemon served for GET /tasks, read once from a file) and the daemon's content type. Nothing else: no
 * routing, no validation, no serialization. Usage: node bench/bare-server.ts PORT BODY_FILE
 */
const [portText, bodyFile] = process.argv.slice(2);
if (portText === undefined || bodyFile === undefined) {
  process.stderr.write('usage: node bench/bare-server.ts PORT BODY_FILE\n');
  process.exit(2);
}
const body = readFileSync(bodyFile);
const headers = {
  'content-type': 'application/json; charset=utf-8',
  'content-length': String(body.length),
};

const server = createServer((_request, response) => {
  response.writeHead(200, headers);
  response.end(body);
});
server.listen(Number(portText), '127.0.0.1', () => {
  process.stdout.write(`bare server listening on 127.0.0.1:${portText} (${body.length} bytes)\n`);
});
process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
