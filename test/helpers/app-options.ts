import { join } from 'node:path';
import type { SecurityOptions } from '../../src/http/security.ts';

/** App settings for tests that build the app directly: loopback, no token unless a test asks for one. */
export const TEST_APP_CONFIG = {
  network: 'none',
  cacheMb: 64,
  corsOrigins: [],
  readyMaxLag: 30,
  nodeSmallIds: [],
} as const;

export function openSecurity(dir: string, overrides: Partial<SecurityOptions> = {}): SecurityOptions {
  return {
    auth: 'none',
    tokenFile: join(dir, 'api-token'),
    boundHost: '127.0.0.1',
    allowedHosts: [],
    maxInFlight: 256,
    ...overrides,
  };
}
