/**
 * How many live event streams an API process serves (docs/API.md#live-events): at most `process` in all,
 * `tenant` for one tenant and `client` for one client (a token's `sub`; on the unauthenticated dev API,
 * the remote address), so no viewer and no tenant can hold every stream. A refusal says which cap and
 * what to do. Pure.
 */

/** The caps; `tenant` applies only when the API has tenants (STARRY_API_TENANT_CLAIM). */
export interface StreamCaps {
  process: number;
  tenant: number;
  client: number;
}

/** Streams one API process serves by default. */
export const DEFAULT_MAX_STREAMS = 100;
/** Streams one client holds by default: a dashboard's few, not a process's worth. */
export const DEFAULT_CLIENT_STREAMS = 10;

/**
 * The caps from what the host set: a tenant's share defaults to half the process's (so two tenants at
 * least share it), a client's to 10 (at most its tenant's).
 *
 * ```ts
 * streamCaps({})                                  // { process: 100, tenant: 50, client: 10 }
 * streamCaps({ maxStreams: 8 })                   // { process: 8, tenant: 4, client: 4 }
 * ```
 * @throws RangeError naming the setting when a share is larger than what it is a share of.
 */
export function streamCaps(set: {
  maxStreams?: number | undefined;
  maxStreamsPerTenant?: number | undefined;
  maxStreamsPerClient?: number | undefined;
}): StreamCaps {
  const process = set.maxStreams ?? DEFAULT_MAX_STREAMS;
  const tenant = set.maxStreamsPerTenant ?? Math.max(1, Math.ceil(process / 2));
  const client = set.maxStreamsPerClient ?? Math.min(DEFAULT_CLIENT_STREAMS, tenant);
  for (const [name, v] of Object.entries({ process, tenant, client }))
    if (!Number.isInteger(v) || v < 1)
      throw new RangeError(`the ${name} stream cap must be a whole number >= 1; got ${v}`);
  if (tenant > process)
    throw new RangeError(
      `STARRY_API_MAX_STREAMS_PER_TENANT (${tenant}) is over STARRY_API_MAX_STREAMS (${process}): a tenant's share is part of the process's; lower it or raise the process's`,
    );
  if (client > tenant)
    throw new RangeError(
      `STARRY_API_MAX_STREAMS_PER_CLIENT (${client}) is over the tenant's share (${tenant}): a client's share is part of its tenant's; lower it or raise STARRY_API_MAX_STREAMS_PER_TENANT`,
    );
  return { process, tenant, client };
}

/** Who asks for a stream: its tenant (none without tenants) and its client, known by its token or its address. */
export interface StreamHolder {
  tenant?: string | undefined;
  client: string;
  clientBy: 'sub' | 'address';
}

/** The streams open now: in the process, of the holder's tenant, of the holder itself. */
export interface StreamsHeld {
  process: number;
  tenant: number;
  client: number;
}

/** Why a stream is refused: 429 for the caller's own share, 503 for the process's. */
export interface StreamRefusal {
  status: 429 | 503;
  cap: keyof StreamCaps;
  detail: string;
}

/**
 * Whether one more stream for `who` is refused: its client's share first, then its tenant's, then the
 * process's. Undefined when it may open.
 *
 * ```ts
 * streamRefusal({ process: 3, tenant: 3, client: 10 }, streamCaps({}), { client: 'alice', clientBy: 'sub' })
 * // { status: 429, cap: 'client', detail: 'this client (sub alice) holds 10 event streams already, …' }
 * ```
 */
export function streamRefusal(held: StreamsHeld, caps: StreamCaps, who: StreamHolder): StreamRefusal | undefined {
  const close = 'close one of them (an EventSource or a fetch left open) and retry';
  if (held.client >= caps.client) {
    const name = who.clientBy === 'sub' ? `sub ${who.client}` : `address ${who.client}`;
    return {
      status: 429,
      cap: 'client',
      detail: `this client (${name}) holds ${held.client} event streams already, the most one client may (STARRY_API_MAX_STREAMS_PER_CLIENT): ${close}`,
    };
  }
  if (who.tenant !== undefined && held.tenant >= caps.tenant)
    return {
      status: 429,
      cap: 'tenant',
      detail: `tenant ${who.tenant} holds ${held.tenant} event streams already, the most one tenant may (STARRY_API_MAX_STREAMS_PER_TENANT): ${close}, or ask the other clients of the tenant to`,
    };
  if (held.process >= caps.process)
    return {
      status: 503,
      cap: 'process',
      detail: `this API process serves ${held.process} event streams already (STARRY_API_MAX_STREAMS): reconnect in a few seconds`,
    };
  return undefined;
}
