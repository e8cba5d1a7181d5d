import type { Metrics } from '../internal/metrics.ts';
import { type Chain, ChainRejectedError, ChainUnavailableError } from './chain.ts';

/** The chain with every submission counted and timed, by operation and outcome. */
export function instrumentChain<C extends Chain>(chain: C, metrics: Metrics): C {
  const submit: Chain['submit'] = async (operation, gas) => {
    const started = performance.now();
    const labels = { operation: operation.kind };
    try {
      const submission = await chain.submit(operation, gas);
      metrics.submissions.inc({ ...labels, outcome: submission.status });
      return submission;
    } catch (error) {
      const outcome =
        error instanceof ChainRejectedError
          ? 'rejected'
          : error instanceof ChainUnavailableError
            ? 'unavailable'
            : 'error';
      metrics.submissions.inc({ ...labels, outcome });
      throw error;
    } finally {
      metrics.submissionDuration.observe(labels, (performance.now() - started) / 1000);
    }
  };
  return new Proxy(chain, {
    get(target, name) {
      if (name === 'submit') return submit;
      const value = Reflect.get(target, name, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
