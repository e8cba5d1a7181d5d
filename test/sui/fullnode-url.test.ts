import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { openServices } from '../../src/daemon.ts';
import { CliError } from '../../src/internal/exit-codes.ts';
import { createLogger } from '../../src/internal/logger.ts';
import { writeSuiKeystore } from '../helpers/sui-fixtures.ts';
import { tempDir } from '../helpers/tmp.ts';

/**
 * The fullnode URL of atoma-node's config.toml (http_rpc_node_addr) is its JSON-RPC URL; this daemon reads
 * sui.rpc.v2 over gRPC-web. Where the URL serves JSON-RPC only, the start stops in one line that says
 * what to set instead. (Where the same URL serves both, as Mysten's public fullnodes do, it is used as
 * it is: test/atoma-config.test.ts starts on the fullnode test double's URL from config.toml.)
 */

/** Test double of a JSON-RPC-only fullnode: answers every POST as JSON-RPC (a parse error), any path. */
async function jsonRpcOnly(): Promise<{ server: Server; url: string }> {
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end('{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` };
}

describe("the fullnode URL of atoma-node's config.toml", () => {
  it('stops the start in one line when it serves JSON-RPC only', async () => {
    const tmp = tempDir();
    const keystore = join(tmp.dir, 'sui.keystore');
    writeSuiKeystore(keystore);
    const { server, url } = await jsonRpcOnly();
    const file = join(tmp.dir, 'config.toml');
    writeFileSync(
      file,
      `[atoma_sui]\nhttp_rpc_node_addr = "${url}"\natoma_package_id = "0x5"\natoma_db = "0x6"\n\n[atoma_state]\ndatabase_url = "postgres://atoma@127.0.0.1/atoma"\n`,
    );
    const config = loadConfig(
      { 'atoma-config': file, 'sui-keystore': keystore, 'data-dir': join(tmp.dir, 'data') },
      {},
    );
    try {
      await assert.rejects(openServices(config, createLogger('silent')), (error) => {
        assert.ok(error instanceof CliError);
        assert.equal(error.exitCode, 2);
        assert.equal(
          error.message,
          `the Sui fullnode URL ${url} ([atoma_sui] http_rpc_node_addr in ${file}) answers, but not with gRPC (HTTP 200 application/json): this daemon reads sui.rpc.v2 over gRPC-web, which a JSON-RPC-only URL does not serve; set --sui-url to a fullnode URL that serves both, as Mysten's public fullnodes do (https://fullnode.testnet.sui.io:443)`,
        );
        return true;
      });
    } finally {
      server.close();
      await tmp.remove();
    }
  });
});
