/** The routes outside `/v1`: the OpenAPI document the app's routes make, and the health check. */
import type { OpenAPIHono } from '@hono/zod-openapi';
import type { AgentClient } from '../../client/agent-client';
import { messageOf } from '../problem';
import type { Env } from './kit';

/**
 * `GET /openapi.json` (every route mounted so far and after) and `GET /healthz` (Temporal reachable or not).
 *
 * ```ts
 * mountDocs(app, async () => client);
 * ```
 */
export function mountDocs(app: OpenAPIHono<Env>, agents: () => Promise<AgentClient>): void {
  app.doc31('/openapi.json', {
    openapi: '3.1.0',
    info: {
      title: 'OpenStarry on Temporal',
      version: '1',
      description:
        'Start, watch, halt and unlock durable, self-correcting agents, and change their limits. See docs/API.md.',
    },
  });

  app.get('/healthz', async (c) => {
    try {
      await (await agents()).client.workflowService.getSystemInfo({});
      return c.json({ ok: true, temporal: 'reachable' });
    } catch (err) {
      c.header('Retry-After', '5');
      return c.json({ ok: false, temporal: 'unreachable', detail: messageOf(err) }, 503);
    }
  });
}
