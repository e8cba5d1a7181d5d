import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type DevDaemon, devDaemon } from './helpers/dev-daemon.ts';
import { ROOT } from './helpers/process.ts';

/**
 * The alert rules (deploy/prometheus/) and the Grafana dashboard (deploy/grafana/), as the node's own
 * Prometheus and Grafana would load them: promtool checks the rules and runs their unit tests (each alert
 * fires on the series that should fire it, after its `for:`, and stays silent on a healthy one); a real
 * Prometheus (Debian's) scrapes a running daemon with the rules loaded, and every rule evaluates; every
 * metric a rule or a panel names is one the daemon exports; every business metric is on the dashboard
 * (as Lodestar's dashboard lint does).
 */
const RULES = join(ROOT, 'deploy', 'prometheus', 'node-daemon.rules.yml');
const RULE_TESTS = join(ROOT, 'deploy', 'prometheus', 'node-daemon.rules.test.yml');
const DASHBOARD = join(ROOT, 'deploy', 'grafana', 'dashboards', 'node-daemon.json');
const PROVISIONING = join(ROOT, 'deploy', 'grafana', 'provisioning', 'dashboards', 'node-daemon.yaml');

/** Whether a tool is installed; with NODE_DAEMON_REQUIRE_DEPLOY=1 (CI) a missing one fails the test. */
function installed(t: { skip: (message: string) => void }, tool: string): boolean {
  if (spawnSync(tool, ['--version']).status === 0) return true;
  const message = `${tool} is not installed (apt-get install prometheus)`;
  if (process.env.NODE_DAEMON_REQUIRE_DEPLOY === '1')
    assert.fail(`NODE_DAEMON_REQUIRE_DEPLOY=1 but ${message}`);
  t.skip(`${message}; CI sets NODE_DAEMON_REQUIRE_DEPLOY=1`);
  return false;
}

/** The metric names an expression reads (a histogram's _bucket, _sum, _count named by its own name). */
function metricsIn(expr: string): string[] {
  return [...expr.matchAll(/\b(node_daemon_[a-z0-9_]+)/g)].map((m) =>
    m[1]!.replace(/_(bucket|sum|count)$/, ''),
  );
}

interface Panel {
  type: string;
  title: string;
  datasource?: { uid?: string };
  targets?: { expr: string; datasource?: { uid?: string } }[];
}

const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
  uid: string;
  panels: Panel[];
  templating: { list: { name: string; type: string; query: unknown }[] };
};
/** How a panel names its data source: Grafana's reference to the dashboard's variable. */
const VARIABLE = '$' + '{datasource}';
const dashboardExprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
const ruleExprs = [...readFileSync(RULES, 'utf8').matchAll(/^\s+expr: (.+)$/gm)].map((m) => m[1]!);

/** A free TCP port on loopback. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

describe('alert rules and the dashboard', () => {
  let d: DevDaemon;
  let exported: Set<string>;
  before(async () => {
    // The usage source named (a database that cannot be reached: its metrics exist all the same).
    d = await devDaemon({
      'usage-source': 'atoma-state',
      'atoma-state-url': 'postgres://nobody@127.0.0.1:1/atoma',
      autopilot: 'dry-run',
    });
    const text = (await d.get('/metrics')).body;
    exported = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
  });
  after(() => d.close());

  it('passes promtool check rules, and promtool test rules with a test for every alert', (t) => {
    if (!installed(t, 'promtool')) return;
    const check = spawnSync('promtool', ['check', 'rules', RULES], { encoding: 'utf8' });
    assert.equal(check.status, 0, check.stdout + check.stderr);
    const test = spawnSync('promtool', ['test', 'rules', RULE_TESTS], { encoding: 'utf8' });
    assert.equal(test.status, 0, test.stdout + test.stderr);
    const alerts = [...readFileSync(RULES, 'utf8').matchAll(/^\s+- alert: (\w+)$/gm)].map((m) => m[1]!);
    const tests = readFileSync(RULE_TESTS, 'utf8');
    for (const alert of alerts) {
      // Each alert has a case that expects it, and one at an earlier time that expects nothing.
      const cases = [...tests.matchAll(new RegExp(`alertname: ${alert}\\n\\s+exp_alerts:(.*)`, 'g'))];
      assert.ok(
        cases.some((c) => c[1]!.trim() === '[]'),
        `${alert}: a case where it stays silent`,
      );
      assert.ok(
        cases.some((c) => c[1]!.trim() === ''),
        `${alert}: a case where it fires`,
      );
    }
    assert.ok(alerts.length >= 12, `${alerts.length} alerts`);
  });

  it('gives every alert a for:, a severity, a summary and a description, and a runbook in ALERTS.md', () => {
    const text = readFileSync(RULES, 'utf8');
    const docs = readFileSync(join(ROOT, 'docs', 'ALERTS.md'), 'utf8');
    for (const block of text.split(/\n\s+- alert: /).slice(1)) {
      const name = block.split('\n')[0]!;
      assert.match(block, /\n\s+for: \d+[smhd]\n/, `${name}: for`);
      assert.match(block, /\n\s+severity: (critical|warning|info)\n/, `${name}: severity`);
      assert.match(block, /\n\s+summary: /, `${name}: summary`);
      assert.match(block, /\n\s+description: /, `${name}: description`);
      assert.match(
        block,
        new RegExp(`runbook: docs/ALERTS\\.md#${name.toLowerCase()}$`, 'm'),
        `${name}: runbook`,
      );
      assert.match(docs, new RegExp(`^## ${name}$`, 'm'), `${name}: its section in docs/ALERTS.md`);
    }
  });

  it("names only metrics the daemon exports, in its rules and in the dashboard's panels", () => {
    for (const expr of [...ruleExprs, ...dashboardExprs]) {
      for (const metric of metricsIn(expr))
        assert.ok(exported.has(metric), `${metric} (in ${expr}) is not exported`);
    }
  });

  it('shows every business metric on the dashboard: earnings, stacks, autopilot, usage source, gas, webhooks', () => {
    const business = [...exported].filter((name) =>
      /^node_daemon_(earnings|stacks|autopilot|usage_source|signer_gas|gas_|webhook|subscriptions|ready|indexer)/.test(
        name,
      ),
    );
    assert.ok(business.length >= 20, `${business.length} business metrics`);
    const shown = new Set(dashboardExprs.flatMap(metricsIn));
    const missing = business.filter((name) => !shown.has(name));
    assert.deepEqual(
      missing,
      [],
      'metrics exported but on no panel of deploy/grafana/dashboards/node-daemon.json',
    );
  });

  it('takes its data source from a template variable, and Grafana provisions it from a file', () => {
    const variable = dashboard.templating.list.find((v) => v.type === 'datasource');
    assert.equal(variable?.name, 'datasource');
    for (const panel of dashboard.panels.filter((p) => p.type !== 'row')) {
      assert.equal(panel.datasource?.uid, VARIABLE, `${panel.title}: no hard-coded data source uid`);
      for (const target of panel.targets ?? []) assert.equal(target.datasource?.uid, VARIABLE);
    }
    const provisioning = readFileSync(PROVISIONING, 'utf8');
    assert.match(provisioning, /^apiVersion: 1$/m);
    assert.match(provisioning, /type: file/);
    assert.match(provisioning, /path: \/var\/lib\/grafana\/dashboards\/node-daemon/);
  });

  it('is loaded by a real Prometheus that scrapes the daemon: the target is up and every rule evaluates', async (t) => {
    if (!installed(t, 'prometheus')) return;
    const address = await d.app.listen({ port: 0, host: '127.0.0.1' });
    const target = new URL(address).host;
    const dir = mkdtempSync(join(tmpdir(), 'node-daemon-prometheus-'));
    const port = await freePort();
    writeFileSync(
      join(dir, 'prometheus.yml'),
      [
        'global:',
        '  scrape_interval: 1s',
        '  evaluation_interval: 1s',
        'rule_files:',
        `  - ${RULES}`,
        'scrape_configs:',
        '  - job_name: node-daemon',
        '    static_configs:',
        `      - targets: ['${target}']`,
        '',
      ].join('\n'),
    );
    let prometheus: ChildProcess | undefined;
    try {
      prometheus = spawn(
        'prometheus',
        [
          `--config.file=${join(dir, 'prometheus.yml')}`,
          `--storage.tsdb.path=${join(dir, 'data')}`,
          `--web.listen-address=127.0.0.1:${port}`,
        ],
        { stdio: 'ignore' },
      );
      const api = async (path: string) => {
        const res = await fetch(`http://127.0.0.1:${port}/api/v1/${path}`);
        return ((await res.json()) as { data: unknown }).data;
      };
      const deadline = Date.now() + 60_000;
      for (;;) {
        try {
          const targets = (await api('targets')) as {
            activeTargets: { health: string; lastError: string }[];
          };
          const groups = (await api('rules')) as {
            groups: {
              rules: { name: string; health: string; lastError?: string; lastEvaluation: string }[];
            }[];
          };
          const rules = groups.groups.flatMap((g) => g.rules);
          const evaluated = rules.every((r) => !r.lastEvaluation.startsWith('0001'));
          if (targets.activeTargets[0]?.health === 'up' && rules.length > 0 && evaluated) {
            const bad = rules.filter((r) => r.health !== 'ok').map((r) => `${r.name}: ${r.lastError}`);
            assert.deepEqual(bad, [], 'every rule evaluates without an error');
            assert.equal(rules.length, ruleExprs.length);
            // The scraped daemon's series are there to alert on.
            const ready = (await api('query?query=node_daemon_ready')) as { result: unknown[] };
            assert.equal(ready.result.length, 1);
            break;
          }
        } catch (error) {
          if (Date.now() > deadline) throw error;
        }
        if (Date.now() > deadline)
          assert.fail('Prometheus did not scrape the daemon and evaluate the rules in time');
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    } finally {
      prometheus?.kill('SIGTERM');
      await new Promise((resolve) => setTimeout(resolve, 200));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
