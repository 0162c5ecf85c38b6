/**
 * Waiting for something another process does (a server, a worker, a workflow): one polling helper for
 * the tests, the benchmarks and the CLI's own waits.
 */

/** Poll `probe` until it returns something other than undefined; fail after `timeoutMs`, naming `what`. */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 60_000,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** `eventually` for a yes/no check. */
export async function until(
  what: string,
  check: () => Promise<boolean> | boolean,
  timeoutMs = 60_000,
  everyMs = 50,
): Promise<void> {
  await eventually(what, async () => ((await check()) ? true : undefined), timeoutMs, everyMs);
}
