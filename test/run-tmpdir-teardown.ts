/** Remove the run's temporary folder (test/run-tmpdir.ts), after every other teardown. */
import { rmSync } from 'node:fs';

export default async function removeRunTmpdir(): Promise<void> {
  const tmp = process.env.STARRY_TEST_TMPDIR;
  if (!tmp) return;
  try {
    rmSync(tmp, { recursive: true, force: true });
  } catch (err) {
    // A file a test's sandbox left unremovable is the run's litter, not its failure.
    console.log(`could not remove the run's temporary folder ${tmp}: ${(err as Error).message}`);
  }
}
