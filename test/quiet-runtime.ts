/**
 * Integration tests run real workers in the jest process. Their SDK and workflow logs go to stderr at
 * WARN, so a passing run reads as passing; a test that provokes warnings on purpose declares them with
 * `expectWarnings` (test/helpers/expected-logs.ts) and they are counted instead of printed.
 */
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import { expectedLog } from './helpers/expected-logs';

try {
  Runtime.install({
    logger: new DefaultLogger('WARN', (entry: LogEntry) => {
      if (expectedLog(entry.message)) return;
      process.stderr.write(`[worker ${entry.level}] ${entry.message} ${entry.meta ? JSON.stringify(entry.meta) : ''}\n`);
    }),
  });
} catch {
  // Already installed in this process by an earlier test file: its logger stays.
}
