import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/**
 * Every metric the daemon exports, declared in this one module: prefixed `node_daemon_`, unit-suffixed.
 * One registry per daemon instance (not prom-client's global one), so tests and several apps in one
 * process do not mix their numbers.
 */
export function createMetrics() {
  const registry = new Registry();
  /** Requests in flight, as the request guard counts them; read when /metrics is scraped, not per request. */
  let inFlight = (): number => 0;
  /** Seconds since the usage source last answered, read when /metrics is scraped (none without a source). */
  let usageSourceLag = (): number | undefined => undefined;
  collectDefaultMetrics({ register: registry, prefix: 'node_daemon_' });
  const registers = [registry];
  return {
    registry,
    httpRequests: new Counter({
      name: 'node_daemon_http_requests_total',
      help: 'HTTP requests answered, by route pattern, method and status code',
      labelNames: ['route', 'method', 'status'] as const,
      registers,
    }),
    httpDuration: new Histogram({
      name: 'node_daemon_http_request_duration_seconds',
      help: 'Time to answer an HTTP request, by route pattern and method',
      labelNames: ['route', 'method'] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    httpShed: new Counter({
      name: 'node_daemon_http_requests_shed_total',
      help: 'Requests refused with 503 because too many were in flight',
      registers,
    }),
    httpCacheLookups: new Counter({
      name: 'node_daemon_http_cache_lookups_total',
      help: 'Cached reads by outcome: hit (the body kept), miss (loaded), not_modified (304 without loading)',
      labelNames: ['outcome'] as const,
      registers,
    }),
    httpInFlight: new Gauge({
      name: 'node_daemon_http_requests_in_flight',
      help: 'Requests being answered now',
      registers,
      collect() {
        this.set(inFlight());
      },
    }),
    /** Where the in-flight gauge reads its value (the request guard's count). */
    countInFlight(source: () => number): void {
      inFlight = source;
    },
    indexerEvents: new Counter({
      name: 'node_daemon_indexer_events_total',
      help: 'Events read by the indexer, by outcome (applied, duplicate, ignored, unknown, malformed, orphaned)',
      labelNames: ['outcome'] as const,
      registers,
    }),
    indexerErrors: new Counter({
      name: 'node_daemon_indexer_errors_total',
      help: 'Indexer pages that failed and were retried after a back-off',
      registers,
    }),
    indexerLag: new Gauge({
      name: 'node_daemon_indexer_lag_seconds',
      help: 'Seconds since the indexer last found itself at the head of its event source',
      registers,
    }),
    submissions: new Counter({
      name: 'node_daemon_submissions_total',
      help: 'Chain submissions by operation and outcome (success, failure, rejected, unavailable)',
      labelNames: ['operation', 'outcome'] as const,
      registers,
    }),
    submissionDuration: new Histogram({
      name: 'node_daemon_submission_duration_seconds',
      help: 'Time from submission to a final transaction, by operation',
      labelNames: ['operation'] as const,
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    earnings: new Gauge({
      name: 'node_daemon_earnings_usdc',
      help: "A node's pending earnings by state (claimable, settling, disputed, unsettled), in USDC",
      labelNames: ['node', 'state'] as const,
      registers,
    }),
    earningsClaimed: new Counter({
      name: 'node_daemon_earnings_claimed_usdc_total',
      help: "A node's fees received through claims, in USDC",
      labelNames: ['node'] as const,
      registers,
    }),
    earningsAttesterRewards: new Counter({
      name: 'node_daemon_earnings_attester_rewards_usdc_total',
      help: "What a node was credited for attesting other nodes' stacks, in USDC",
      labelNames: ['node'] as const,
      registers,
    }),
    earningsRefunded: new Counter({
      name: 'node_daemon_earnings_refunded_usdc_total',
      help: "The refunds a node's claims paid to the stacks' buyers, in USDC",
      labelNames: ['node'] as const,
      registers,
    }),
    stacks: new Gauge({
      name: 'node_daemon_stacks',
      help: "A node's stacks by state (open, settling, claimable, claimed, disputed)",
      labelNames: ['node', 'state'] as const,
      registers,
    }),
    autopilotActions: new Counter({
      name: 'node_daemon_autopilot_actions_total',
      help: 'Autopilot actions by kind (settle, direct_claim, claim, attest) and outcome (succeeded, failed, skipped, planned)',
      labelNames: ['kind', 'outcome'] as const,
      registers,
    }),
    autopilotHalted: new Gauge({
      name: 'node_daemon_autopilot_halted',
      help: '1 while the autopilot is halted after repeated contract aborts (POST /autopilot/resume)',
      registers,
    }),
    autopilotGasBudgetRemaining: new Gauge({
      name: 'node_daemon_autopilot_gas_budget_remaining_mist',
      help: "What is left of the autopilot's --autopilot-max-gas-per-day over the last 24 hours, MIST",
      registers,
    }),
    autopilotPassDuration: new Histogram({
      name: 'node_daemon_autopilot_pass_duration_seconds',
      help: 'Time of one autopilot pass: planning, and the transactions it submitted',
      buckets: [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
      registers,
    }),
    ready: new Gauge({
      name: 'node_daemon_ready',
      help: '1 while /ready answers ready (the store answers, the indexer within --ready-max-lag of the head), else 0',
      registers,
    }),
    subscriptionsToDeprecatedTasks: new Gauge({
      name: 'node_daemon_subscriptions_to_deprecated_tasks',
      help: "A node's subscriptions to tasks that were deprecated or removed (it serves a task going away)",
      labelNames: ['node'] as const,
      registers,
    }),
    // The usage source (src/usage/): whether it answers, when it last did, what it follows and sets.
    usageSourceUp: new Gauge({
      name: 'node_daemon_usage_source_up',
      help: '1 while the usage source (atoma-state) answers its polls, 0 while it is lost; absent without a source',
      registers,
    }),
    usageSourceLastPoll: new Gauge({
      name: 'node_daemon_usage_source_last_poll_timestamp_seconds',
      help: 'When the usage source last answered a poll (Unix time)',
      registers,
    }),
    usageSourceLag: new Gauge({
      name: 'node_daemon_usage_source_lag_seconds',
      help: "How far the mirrored usage may be behind the source's: seconds since the last poll it answered",
      registers,
      collect() {
        const lag = usageSourceLag();
        if (lag !== undefined) this.set(lag);
      },
    }),
    /** Where the usage source's lag gauge reads its value (the mirror's last answered poll). */
    measureUsageSourceLag(source: () => number | undefined): void {
      usageSourceLag = source;
    },
    usageSourceStacks: new Gauge({
      name: 'node_daemon_usage_source_stacks_followed',
      help: "The operator's open stacks whose usage the usage source mirrors",
      registers,
    }),
    usageSourcePolls: new Counter({
      name: 'node_daemon_usage_source_polls_total',
      help: 'Polls of the usage source by outcome (ok, failed)',
      labelNames: ['outcome'] as const,
      registers,
    }),
    usageSourceChanges: new Counter({
      name: 'node_daemon_usage_source_changes_total',
      help: "Stacks whose usage a poll set to the source's value",
      registers,
    }),
    usageSourcePollDuration: new Histogram({
      name: 'node_daemon_usage_source_poll_duration_seconds',
      help: 'Time of one poll of the usage source: the source read and the mirror written',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
      registers,
    }),
    // The signer's gas and its warning (operations/conditions.ts): an alert rule compares the two.
    signerGasBalance: new Gauge({
      name: 'node_daemon_signer_gas_balance_mist',
      help: "The signer's SUI for gas, in MIST (1e9 MIST is 1 SUI), as last read (every 15 s)",
      registers,
    }),
    gasWarningThreshold: new Gauge({
      name: 'node_daemon_gas_warning_threshold_mist',
      help: 'The --gas-warning-mist setting: the signer_gas_low event fires when the balance goes below it',
      registers,
    }),
    // Signed webhooks (operations/webhooks.ts); the alert rules of deploy/prometheus use these names.
    webhookDeliveries: new Counter({
      name: 'node_daemon_webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome (delivered, retried: failed and due again, failed: no more attempts)',
      labelNames: ['outcome'] as const,
      registers,
    }),
    webhookPending: new Gauge({
      name: 'node_daemon_webhook_deliveries_pending',
      help: 'Webhook deliveries of enabled endpoints not yet delivered (refreshed every few seconds)',
      registers,
    }),
    webhookOldestPendingAge: new Gauge({
      name: 'node_daemon_webhook_oldest_pending_age_seconds',
      help: 'Seconds since the event of the oldest pending webhook delivery happened (0: none pending)',
      registers,
    }),
    webhookEndpointsDisabled: new Gauge({
      name: 'node_daemon_webhook_endpoints_disabled',
      help: 'Webhook endpoints disabled (their receiver answered 410, or failed for 3 days)',
      registers,
    }),
    storeQueryDuration: new Histogram({
      name: 'node_daemon_store_query_duration_seconds',
      help: 'Time of store calls, by call',
      labelNames: ['query'] as const,
      buckets: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5],
      registers,
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
