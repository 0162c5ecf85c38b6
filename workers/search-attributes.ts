/**
 * A bare server works, or says what to run: a workflow worker registers the search attributes the agents
 * write (`SEARCH_ATTRIBUTES`) when its namespace lacks them, as `starry dev` does for its own server;
 * where it may not (Temporal Cloud, a role without the right), it refuses to start naming the commands.
 */
import type { NativeConnection } from '@temporalio/worker';
import { ConfigError } from '../core/errors';
import { ensureSearchAttributes } from '../dev/dev-server';
import { missingSearchAttributes, SEARCH_ATTRIBUTES } from '../workflows/search-attributes';

/**
 * Register what is missing; nothing when all is there.
 *
 * @throws ConfigError naming the missing attributes and the commands that register them.
 */
export async function searchAttributesReady(connection: NativeConnection, namespace: string): Promise<void> {
  try {
    await ensureSearchAttributes(connection, namespace);
  } catch (err) {
    const present: string[] = await connection.operatorService
      .listSearchAttributes({ namespace })
      .then((r) => Object.keys(r.customAttributes ?? {}))
      .catch(() => []);
    const missing = Object.keys(SEARCH_ATTRIBUTES).filter((n) => !present.includes(n));
    throw new ConfigError(
      `${missingSearchAttributes(namespace, missing)} (registering them here failed: ${(err as Error).message})`,
    );
  }
}
