import { rmSync } from 'node:fs';
import { warn } from './report.ts';

/**
 * Until the returned function is called, SIGINT or SIGTERM says what the run does about it, awaits release
 * (dropping what the run created beyond its temp directory), removes tmp and exits 130. A second signal
 * meanwhile is ignored: the first one's release is under way.
 */
export function releaseOnSignal(what: string, release: () => Promise<unknown>, tmp: string): () => void {
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) return;
    interrupted = true;
    warn(`\nbench: ${signal}: ${what}`);
    void release().finally(() => {
      rmSync(tmp, { recursive: true, force: true });
      process.exit(130);
    });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
}
