import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadMigrations } from '../src/store/migrations.ts';

/**
 * Migrations are append-only: a store records each applied migration's checksum (sha256 of the whole file,
 * comments included) and refuses to open when a shipped one differs (store_migration_changed). These are
 * the checksums of every migration released so far, so that an edit of one (a path renamed in a comment
 * is enough) fails here, before it strands a store. A new migration is added to its list.
 */
const RELEASED: Record<'sqlite' | 'postgres', Record<string, string>> = {
  sqlite: {
    '0001-initial.sql': '1a0926ac95cfaec11f34c287381d3073b15bf0ca1598af162509730ac3368372',
    '0002-usage-and-idempotency.sql': 'd0fcafd9b3d2b777a87a8c62b58e361fd8459d69ca586d3ce0b0ef935c1b8b03',
    '0003-earnings-and-autopilot.sql': '15e272a0efb1be18dd7d4ec97fec67e21809f1c46722bd0b9124d58fe61e7315',
    '0004-node-events.sql': '3d5e85f67eb9bafd12562523e9216bb5d2a0704ff18966f0ca0850aaaa24b06b',
    '0005-topic-versions.sql': '08e5c52a0e87319ae6039868f5773a6690ffef305edea0d0db9320e2e31968d8',
    '0006-autopilot-at-scale.sql': '3808520b30540aa3684b7069472590a580afc3b5857578c33f84ddd6e6000f7e',
    '0007-settle-candidates-with-usage.sql':
      '535292702511640471a566409fe837c49e58f88411b36d7150cea144d7aa66e7',
    '0008-stack-rows-record-creation.sql': 'd94ee37906f7efa2e7af6e523af4b30a8e0a0e9cf137c4d08550d67c9b8bd8e7',
    '0009-usage-source.sql': 'd31691e33e8f6e78a9685cbf069e3916e2dc49ae584b76e37e9760357ac35ebe',
    '0010-node-conditions.sql': '0639100b1a977cf8a8dea6117bba003cd92f59d9e92fb99a8db440f22f6e766d',
    '0012-api-tokens-and-audit.sql': '7846422aca513ce0bcd1d1fe31c8ee6be43f6dd514b3678d0fa40c7985780e6b',
  },
  postgres: {
    '0001-initial.sql': 'a3f7c8d10f4df940a314bd42786c0c451a6a37f41145408ed8b7bca898285294',
    '0002-usage-and-idempotency.sql': '3ece9cec29dd18db31de138c9275d252e009784f15d13c59dd1b8c1e493105a3',
    '0003-earnings-and-autopilot.sql': '7a4c59ce1304d9b80d752c685e55fae77f3b9a6f07fca08e77fe2089fe4658a6',
    '0004-node-events.sql': '35e4238e47322f8d5d02cfc4e6bf99bec7285f845b4fbc16b90b73b1d85478c3',
    '0005-topic-versions.sql': 'ec8db7d9a121ef4dfbb59e26bf0e7484c3bb54c6d3d9fda029d5d8860d2bcfc8',
    '0006-autopilot-at-scale.sql': 'f17255af5498b89f26c0eb0990793d25e6871e766aabefe23ab92e2ee67e2389',
    '0007-stack-write-stamps.sql': '24a59c4cf644ba0b2a6ed00bf9a6bccaba8336e7b0cb4db8aa19d36527e53cf6',
    '0008-settle-candidates-with-usage.sql':
      '7ce2a42eb9765b0feead12fba6a83ca1835ab36723ba2a6c3e92bb57f4163edf',
    '0009-usage-guard.sql': '9442daaae60a22229624f551a5e859e453dfa31aff1427431d8d5ff4c828a19e',
    '0010-stack-rows-record-creation.sql': 'bf964cce73e03320db99aedb77109469341aad42ee1dc4ab12d4e72486987509',
    '0011-usage-source.sql': 'd31691e33e8f6e78a9685cbf069e3916e2dc49ae584b76e37e9760357ac35ebe',
    '0012-node-conditions.sql': 'c6321a5358d61876ce89632c32741369e234a4a2f461be4937254bb205f2e8c2',
    '0014-api-tokens-and-audit.sql': '6ecb617506374598a87fc8933866d9f33472f1c475846eb01f3c77e09c61fb0f',
  },
};

describe('migrations', () => {
  for (const engine of ['sqlite', 'postgres'] as const) {
    it(`ships every released ${engine} migration unchanged, byte for byte, and each new one listed here`, () => {
      const shipped = loadMigrations(new URL(`../src/store/${engine}/migrations/`, import.meta.url));
      assert.deepEqual(
        Object.fromEntries(shipped.map((m) => [m.name, m.checksum])),
        RELEASED[engine],
        `a ${engine} migration was changed, or a new one is not in RELEASED: migrations are append-only`,
      );
    });
  }
});
