/**
 * What a helper process the worker starts may see of its environment (docs/ARCHITECTURE.md, "Trust
 * boundary"): the local model host, the dev tool worker, the dev server. Each gets only the variables
 * it needs, never an LLM key, a cloud credential, a Temporal key or the API's JWT secret; and what such
 * a process prints is never shown with the worker's secrets in it. Pure: the callers spawn.
 */

/** Names that hold a credential: a provider's key, a cloud's secret, a token, a password, the JWT secret, OTLP headers. */
const SECRET_NAME = /(KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL|SESSION|AUTH|COOKIE|PRIVATE|HEADERS)/i;

/** Credentials whose names the pattern above does not catch. */
const SECRET_NAMES = new Set([
  'GOOGLE_APPLICATION_CREDENTIALS',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  'TEMPORAL_TLS_CERT',
]);

/**
 * Whether a variable may hold a credential, judged by its name (a false positive costs a helper nothing
 * it needs; a miss would hand it a key).
 *
 * ```ts
 * isSecretName('OPENAI_API_KEY') // true
 * isSecretName('PATH') // false
 * ```
 */
export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name) || SECRET_NAMES.has(name.toUpperCase());
}

/** What every helper process gets: where programs are, the locale, its temporary folder and home. */
export const BASE_CHILD_VARS = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TMPDIR', 'TZ'] as const;

/**
 * The environment of a helper process: the base variables and `names` (an entry ending in `*` names a
 * prefix), minus anything that may hold a credential, whatever its name's prefix, plus `extra` as given.
 *
 * ```ts
 * childEnv(process.env, ['TEMPORAL_*'], { NODE_LLAMA_CPP_SKIP_DOWNLOAD: 'true' })
 * // { PATH, HOME, LANG, TEMPORAL_ADDRESS, …, NODE_LLAMA_CPP_SKIP_DOWNLOAD } without TEMPORAL_API_KEY
 * ```
 */
export function childEnv(
  env: Readonly<Record<string, string | undefined>>,
  names: readonly string[] = [],
  extra: Readonly<Record<string, string>> = {},
): Record<string, string> {
  const wanted = [...BASE_CHILD_VARS, ...names];
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || isSecretName(name)) continue;
    if (wanted.some((w) => (w.endsWith('*') ? name.startsWith(w.slice(0, -1)) : name === w))) out[name] = value;
  }
  return { ...out, ...extra };
}

/**
 * `text` with the value of every credential in `env` replaced by its name (`[OPENAI_API_KEY]`): what a
 * helper process printed goes into an error a task's submitter reads. Values shorter than 8 characters
 * are left (they would match ordinary words).
 *
 * ```ts
 * redactSecrets('key=sk-123456789', { OPENAI_API_KEY: 'sk-123456789' }) // 'key=[OPENAI_API_KEY]'
 * ```
 */
export function redactSecrets(text: string, env: Readonly<Record<string, string | undefined>>): string {
  let out = text;
  const secrets = Object.entries(env)
    .filter((e): e is [string, string] => e[1] !== undefined && e[1].length >= 8 && isSecretName(e[0]))
    .sort((a, b) => b[1].length - a[1].length);
  for (const [name, value] of secrets) out = out.split(value).join(`[${name}]`);
  return out;
}
