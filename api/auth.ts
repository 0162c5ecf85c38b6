/**
 * Who may do what over HTTP: a bearer JWT verified with `jose` (an HS256 shared secret for local use,
 * or a JWKS URL for Cognito or any OIDC issuer), `exp`, `iss` and `aud` checked, `alg: none` and
 * unexpected algorithms refused. Roles come from the `roles` claim or Cognito's `cognito:groups`:
 * `viewer` reads, `operator` also submits, messages and halts, `approver` also decides tool calls that wait
 * for approval (it reads, but does not submit), `admin` may do everything, unlock included. With a tenant
 * claim configured, the token's tenant comes from that claim, and a token without one is refused.
 */
import {
  createRemoteJWKSet,
  errors as joseErrors,
  jwtVerify,
  SignJWT,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import { TenantIdSchema } from '../core/tenant';

export type Role = 'viewer' | 'operator' | 'approver' | 'admin';
/** The roles each role holds: operator and approver are two duties (who starts work, who lets it act), admin all. */
const HOLDS: Record<Role, readonly Role[]> = {
  viewer: ['viewer'],
  operator: ['operator', 'viewer'],
  approver: ['approver', 'viewer'],
  admin: ['admin', 'approver', 'operator', 'viewer'],
};

export interface Principal {
  /** The token's subject: recorded as the `by` of halts, messages and unlocks. */
  sub: string;
  roles: Role[];
  /** The tenant the caller acts in (docs/API.md#tenants); absent when the API has no tenant claim (one tenant). */
  tenant?: string;
}

export interface Authenticator {
  /** @throws AuthError 401 for a missing, expired or bad token. */
  verify(authorization: string | undefined): Promise<Principal>;
}

/** A refusal with its HTTP status: 401 (who are you?) or 403 (not allowed). */
export class AuthError extends Error {
  constructor(
    readonly status: 401 | 403,
    message: string,
  ) {
    super(message);
    this.name = 'AuthError';
  }
}

/** True when one of `roles` holds `needed` (admin holds every role; operator and approver hold viewer). */
export function roleAllows(roles: readonly Role[], needed: Role): boolean {
  return roles.some((r) => HOLDS[r].includes(needed));
}

export interface AuthConfig {
  /** HS256 shared secret (STARRY_API_JWT_SECRET). */
  secret?: string;
  /**
   * JWKS URL (STARRY_API_JWKS_URL), e.g. Cognito's
   * `https://cognito-idp.<region>.amazonaws.com/<pool>/.well-known/jwks.json`.
   */
  jwksUrl?: string;
  issuer?: string;
  audience?: string;
  /**
   * The claim naming the caller's tenant (STARRY_API_TENANT_CLAIM), e.g. `tenant`, `org_id` or Cognito's
   * `custom:tenant`. Unset: one tenant, every caller sees every agent.
   */
  tenantClaim?: string;
}

/**
 * The authenticator for a config: HS256 with a secret, or the issuer's keys from a JWKS URL.
 *
 * ```ts
 * const auth = authenticator({ secret: process.env.STARRY_API_JWT_SECRET });
 * ```
 */
export function authenticator(config: AuthConfig): Authenticator {
  let key: Uint8Array | JWTVerifyGetKey;
  let algorithms: string[];
  if (config.secret) {
    if (config.secret.length < 32)
      throw new Error('STARRY_API_JWT_SECRET must be at least 32 characters (HS256 needs 256 bits)');
    key = new TextEncoder().encode(config.secret);
    algorithms = ['HS256'];
  } else if (config.jwksUrl) {
    key = createRemoteJWKSet(new URL(config.jwksUrl));
    algorithms = ['RS256', 'RS384', 'RS512', 'ES256', 'ES384', 'PS256'];
  } else {
    throw new Error('no API authentication configured: set STARRY_API_JWT_SECRET or STARRY_API_JWKS_URL');
  }
  return {
    async verify(authorization) {
      const token = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
      if (!token) throw new AuthError(401, 'a bearer token is required: Authorization: Bearer <JWT>');
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, key as Uint8Array, {
          algorithms,
          ...(config.issuer ? { issuer: config.issuer } : {}),
          ...(config.audience ? { audience: config.audience } : {}),
        }));
      } catch (err) {
        throw new AuthError(401, `the bearer token was refused: ${reasonOf(err)}`);
      }
      if (typeof payload.exp !== 'number')
        throw new AuthError(401, 'the bearer token was refused: it has no exp (expiry) claim');
      if (!payload.sub) throw new AuthError(401, 'the bearer token was refused: it has no sub (subject) claim');
      const principal: Principal = { sub: payload.sub.slice(0, 200), roles: rolesOf(payload) };
      if (config.tenantClaim !== undefined) principal.tenant = tenantOf(payload, config.tenantClaim);
      return principal;
    },
  };
}

/**
 * The tenant a verified token names in `claim`. A token without it is refused (never all tenants): this
 * API keeps each tenant to its own agents.
 */
function tenantOf(payload: JWTPayload, claim: string): string {
  const raw = payload[claim];
  if (raw === undefined || raw === null || raw === '') {
    throw new AuthError(
      403,
      `this API keeps each tenant to its own agents, and the token has no ${claim} claim naming its tenant: ask for a token with one (e.g. "${claim}": "acme")`,
    );
  }
  const parsed = TenantIdSchema.safeParse(raw);
  if (!parsed.success) {
    throw new AuthError(
      403,
      `the token's ${claim} claim is not a tenant id: ${parsed.error.issues.map((i) => i.message).join('; ')}`,
    );
  }
  return parsed.data;
}

function reasonOf(err: unknown): string {
  if (err instanceof joseErrors.JWTExpired) return 'it has expired';
  if (err instanceof joseErrors.JWTClaimValidationFailed) return `claim ${err.claim} is not accepted (${err.reason})`;
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return 'its algorithm is not accepted';
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return 'its signature does not verify';
  return err instanceof Error ? err.message : String(err);
}

/** `roles` (or Cognito's `cognito:groups`), keeping only the roles this API knows. */
function rolesOf(payload: JWTPayload): Role[] {
  const raw = payload.roles ?? payload['cognito:groups'];
  const list = Array.isArray(raw) ? raw : typeof raw === 'string' ? [raw] : [];
  return list.filter((r): r is Role => typeof r === 'string' && r in HOLDS);
}

/**
 * A token for local use, signed with the HS256 secret (`starry api-token`); `claims` adds others (a tenant).
 *
 * ```ts
 * await devToken({ secret, sub: 'alice', roles: ['operator'], ttlSeconds: 3600, claims: { tenant: 'acme' } })
 * ```
 */
export function devToken(opts: {
  secret: string;
  sub: string;
  roles: Role[];
  ttlSeconds?: number;
  issuer?: string;
  audience?: string;
  claims?: Record<string, unknown>;
}): Promise<string> {
  let jwt = new SignJWT({ ...opts.claims, roles: opts.roles })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(opts.sub)
    .setIssuedAt()
    .setExpirationTime(`${opts.ttlSeconds ?? 3600}s`);
  if (opts.issuer) jwt = jwt.setIssuer(opts.issuer);
  if (opts.audience) jwt = jwt.setAudience(opts.audience);
  return jwt.sign(new TextEncoder().encode(opts.secret));
}
