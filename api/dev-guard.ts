/**
 * The guard of the HTTP API without authentication (`starry dev`, `starry api --insecure-dev`): the
 * decision is core/dev-api.ts's, the answer a problem like every other error.
 */
import type { MiddlewareHandler } from 'hono';
import { devApiRefusal } from '../core/dev-api';
import { problem } from './problem';

/**
 * The guard of an app without authentication (core/dev-api.ts): a 403 problem for a request addressed
 * to a name that is not loopback, or a mutating one from another origin or without a JSON body.
 */
export const devApiGuard: MiddlewareHandler = async (c, next) => {
  const refusal = devApiRefusal({
    method: c.req.method,
    // An in-process request (`app.request('/openapi.json')`) has no Host header: its URL's host is the one it names.
    host: c.req.header('host') ?? new URL(c.req.url).host,
    origin: c.req.header('origin'),
    secFetchSite: c.req.header('sec-fetch-site'),
    contentType: c.req.header('content-type'),
  });
  if (refusal) return problem(c, 403, refusal);
  await next();
};
