/** The long-running services: `starry worker`, `starry api` (and `starry api-token` for its bearer tokens). */
import type { Command } from 'commander';
import type { Role } from '../../api/auth';
import type { LocalApi } from '../../api/serve';
import { temporalEnv } from '../../client/connection';
import { apiPortRefusal } from '../api-port';
import { actingTenant, EXIT, ExitError, parsePort, sayErr, untilSignal } from '../common';
import { say } from '../format';

/** Register worker, api and api-token. */
export function serveCommands(program: Command): void {
  program
    .command('worker')
    .description(
      'run a worker (its environment: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, STARRY_WORKER_POLICY, … — docs/ARCHITECTURE.md#the-worker)',
    )
    .option(
      '--set-current',
      "make this worker's version the current one once it polls (STARRY_MAKE_CURRENT=always; docs/ARCHITECTURE.md#versioning)",
    )
    .option(
      '--tools',
      'a tool worker: polls STARRY_TOOL_TASK_QUEUE and runs tool calls only (no workflows, no LLM calls); refuses to start with an LLM key in its environment',
    )
    .action(async (o: { setCurrent?: boolean; tools?: boolean }) => {
      if (o.setCurrent) process.env.STARRY_MAKE_CURRENT = 'always';
      // runWorker installs the worker's logger: every failure as one line, pain included.
      await (await import('../../workers/main')).runWorker(undefined, { tools: !!o.tools });
    });

  program
    .command('api')
    .description(
      'serve the HTTP API on 127.0.0.1 (auth from STARRY_API_JWT_SECRET or STARRY_API_JWKS_URL; see docs/API.md)',
    )
    .option('--port <n>', 'port', parsePort, 8080)
    .option('--insecure-dev', 'no authentication: every caller is an admin (loopback only; never in production)')
    .action(async (o: { port: number; insecureDev?: boolean }) => {
      const api = await startApi(o.port, !!o.insecureDev);
      sayErr(
        `HTTP API on ${api.url} (OpenAPI: ${api.url}/openapi.json) against Temporal at ${temporalEnv().address}; Ctrl-C stops it\n`,
      );
      await untilSignal();
      await api.close();
    });

  program
    .command('api-token')
    .description(
      'mint a bearer token for the HTTP API, signed with STARRY_API_JWT_SECRET (for local use and tests); with --tenant, for that tenant (its claim: STARRY_API_TENANT_CLAIM, default "tenant")',
    )
    .requiredOption('--role <role>', 'viewer | operator | approver | admin')
    .option(
      '--sub <name>',
      'who the token is for (recorded as `by` of halts and unlocks)',
      process.env.USER ?? 'operator',
    )
    .option('--ttl <seconds>', 'lifetime in seconds', (v) => Number(v), 3600)
    .action(async (o: { role: string; sub: string; ttl: number }) => {
      const secret = process.env.STARRY_API_JWT_SECRET;
      if (!secret)
        throw new ExitError(
          'set STARRY_API_JWT_SECRET (at least 32 characters) to the secret the API checks tokens with',
          EXIT.USAGE,
        );
      if (!['viewer', 'operator', 'approver', 'admin'].includes(o.role))
        throw new ExitError(`--role must be viewer, operator, approver or admin, got "${o.role}"`, EXIT.USAGE);
      if (!Number.isInteger(o.ttl) || o.ttl <= 0)
        throw new ExitError('--ttl must be a whole number of seconds > 0', EXIT.USAGE);
      // Loaded on use: the API's modules (jose is ESM-only) stay out of every other command's start.
      const { devToken } = await import('../../api/auth');
      const tenant = actingTenant();
      const token = await devToken({
        secret,
        sub: o.sub,
        roles: [o.role as Role],
        ttlSeconds: o.ttl,
        ...(process.env.STARRY_API_ISSUER ? { issuer: process.env.STARRY_API_ISSUER } : {}),
        ...(process.env.STARRY_API_AUDIENCE ? { audience: process.env.STARRY_API_AUDIENCE } : {}),
        ...(tenant !== undefined ? { claims: { [process.env.STARRY_API_TENANT_CLAIM || 'tenant']: tenant } } : {}),
      });
      say(`${token}\n`);
    });
}

/**
 * The HTTP API on loopback; `insecure` (no auth) says so loudly.
 *
 * ```ts
 * const api = await startApi(8080, false); // needs STARRY_API_JWT_SECRET or STARRY_API_JWKS_URL
 * ```
 *
 * @throws ExitError (1) when the port is taken, naming `flag`, the option that picks another.
 */
export async function startApi(port: number, insecure: boolean, flag = '--port'): Promise<LocalApi> {
  if (!insecure && !process.env.STARRY_API_JWT_SECRET && !process.env.STARRY_API_JWKS_URL) {
    throw new ExitError(
      'the API needs authentication: set STARRY_API_JWT_SECRET (HS256) or STARRY_API_JWKS_URL, or pass --insecure-dev for a loopback-only dev API',
      EXIT.USAGE,
    );
  }
  const { serveApi } = await import('../../api/serve');
  const api = await serveApi({ port, insecureDev: insecure }).catch(async (err: unknown) => {
    throw await apiPortRefusal(port, flag, err);
  });
  if (insecure)
    sayErr(
      `WARNING: the HTTP API on ${api.url} runs WITHOUT AUTHENTICATION (--insecure-dev): every local caller is an admin. Loopback only; never expose it.\n`,
    );
  return api;
}
