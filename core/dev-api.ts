/**
 * Which requests the HTTP API serves when it runs without authentication (`starry dev` with no auth
 * configured, `starry api --insecure-dev`), where every caller is an admin. Its callers are meant to be
 * programs on this machine; a browser is how anyone else gets in. A web page the developer visits can
 * send a bodyless or form POST to 127.0.0.1 without asking first (no CORS preflight), and a page whose
 * name resolves to 127.0.0.1 is, to the browser, the API's own origin (DNS rebinding). So the dev API
 * answers requests addressed to a loopback name only, and takes a mutating request only from its own
 * origin and with a JSON body, which another origin cannot send without a preflight the API never grants.
 * Pure: api/app.ts applies it to every request of an app without authentication.
 */

/** The headers of a request that decide, as the request carried them (absent: not sent). */
export interface DevApiRequest {
  method: string;
  host?: string;
  origin?: string;
  secFetchSite?: string;
  contentType?: string;
}

/** A loopback name, with any port: what a program on this machine calls the API by. */
const LOOPBACK_HOST = /^(?:127\.0\.0\.1|localhost|\[::1\])(?::\d{1,5})?$/i;

/** Methods that change nothing: the API's GET routes only read (a cross-origin page cannot read their answers). */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

const WITHOUT_AUTH = 'this API runs without authentication (starry dev, starry api --insecure-dev), so';
const OR_AUTH =
  'or configure authentication (STARRY_API_JWT_SECRET or STARRY_API_JWKS_URL; docs/API.md#authentication)';

/**
 * Why the dev API refuses `req` (a sentence for a 403 problem: what was wrong and what to do), or
 * undefined when it serves it.
 *
 * ```ts
 * devApiRefusal({ method: 'GET', host: 'evil.example' }) // "… answers only requests addressed to a loopback name …"
 * devApiRefusal({ method: 'POST', host: '127.0.0.1:8080', contentType: 'application/json' }) // undefined
 * ```
 */
export function devApiRefusal(req: DevApiRequest): string | undefined {
  const { host } = req;
  if (host === undefined || !LOOPBACK_HOST.test(host))
    return `${WITHOUT_AUTH} it answers only requests addressed to a loopback name (127.0.0.1, localhost or [::1], any port); this one was addressed to ${host === undefined ? 'no host' : `'${host}'`}, as a web page whose name resolves to this machine would send it. Call it at http://127.0.0.1:<port>, ${OR_AUTH}.`;
  if (SAFE_METHODS.has(req.method.toUpperCase())) return undefined;
  const origin = req.origin?.toLowerCase();
  const site = req.secFetchSite?.toLowerCase();
  const own = `http://${host.toLowerCase()}`;
  if ((origin !== undefined && origin !== own) || (site !== undefined && site !== 'same-origin' && site !== 'none'))
    return `${WITHOUT_AUTH} it takes ${req.method} only from programs and from its own origin (${own}); this one came from ${origin !== undefined ? `the origin '${req.origin}'` : 'another site'}${site !== undefined ? ` (Sec-Fetch-Site: ${req.secFetchSite})` : ''}, as a web page the browser visits would send it to halt or unlock agents. Call it with curl or the CLI, ${OR_AUTH}.`;
  const media = req.contentType?.split(';')[0]?.trim().toLowerCase();
  if (media !== 'application/json')
    return `${WITHOUT_AUTH} a ${req.method} must carry a JSON body with Content-Type: application/json (sent: ${req.contentType === undefined ? 'none' : `'${req.contentType}'`}), which an HTML form or a web page's no-cors fetch cannot send. Send -H 'content-type: application/json' -d '{}' when there is nothing else to say, ${OR_AUTH}.`;
  return undefined;
}
