/**
 * Integration tests run real workers in the jest process. Their SDK and workflow logs go to stderr at
 * WARN, so a passing run reads as passing; a test that provokes warnings on purpose declares them with
 * `expectWarnings` (test/helpers/expected-logs.ts) and they are counted instead of printed.
 */
import { describeLogEntry, installWorkerLogger } from '../workers/log';
import { expectedLog } from './helpers/expected-logs';

// Failures the project classified (pain, retried transients, fatal errors, failed tasks) are what the
// tests provoke and assert on; anything else (a crash, an unexpected warning) is printed.
installWorkerLogger('WARN', {
  coreErrorsOnly: true,
  skip: (entry) => expectedLog(entry.message) || describeLogEntry(entry) !== undefined,
});
