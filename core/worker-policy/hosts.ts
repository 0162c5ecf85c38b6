/**
 * Host allow entries (`httpAllow`, `llmAllow`, an `mcpEnv` binding's hosts): whether a URL has a host an
 * entry names, and whether a task's entry grants nothing the worker's do not.
 */

/**
 * Whether `url` has a host `allow` names. Entries match the hostname exactly, `host:port` exactly,
 * `host:*` on any port, or `*.example.com` for any subdomain. An entry without a port allows the
 * scheme's default port only (80, 443): allowing `localhost` must not open every service on it.
 *
 * ```ts
 * isHostAllowed(new URL('https://docs.example.com/'), ['*.example.com']) // true
 * isHostAllowed(new URL('http://localhost:8233/'), ['localhost']) // false
 * isHostAllowed(new URL('http://localhost:8233/'), ['localhost:*']) // true
 * ```
 */
export function isHostAllowed(url: URL, allow: readonly string[]): boolean {
  const host = url.hostname.toLowerCase();
  // URL leaves `port` empty for the scheme's default port.
  const port = url.port || (url.protocol === 'https:' ? '443' : url.protocol === 'http:' ? '80' : '');
  return allow.some((raw) => {
    const entry = raw.toLowerCase();
    const m = /^(.*):(\d+|\*)$/.exec(entry);
    const [name, entryPort] = m
      ? [m[1] as string, m[2] === '*' ? '*' : String(Number(m[2]))]
      : [entry, url.protocol === 'https:' ? '443' : '80'];
    if (entryPort !== '*' && entryPort !== port) return false;
    if (name.startsWith('*.')) return host.endsWith(name.slice(1));
    return name === host;
  });
}

/** `host` or `host:port` of a URL as an allow entry names it (the port only when the URL gives one). */
export function hostOf(url: string): string | undefined {
  try {
    const u = new URL(url);
    return u.port ? `${u.hostname}:${u.port}` : u.hostname;
  } catch {
    return undefined;
  }
}

/** True when the allow entry `entry` grants nothing the entries in `outer` do not. */
export function hostEntryWithin(entry: string, outer: readonly string[]): boolean {
  const e = entry.toLowerCase();
  return outer.some((raw) => {
    const o = raw.toLowerCase();
    if (o === e) return true;
    // `host:*` covers the host on any port.
    if (o.endsWith(':*'))
      return e === o.slice(0, -2) || (e.startsWith(o.slice(0, -1)) && /^\d+$/.test(e.slice(o.length - 1)));
    if (!o.startsWith('*.')) return false;
    // `*.example.com` covers `a.example.com` and `*.a.example.com`.
    const bare = e.startsWith('*.') ? e.slice(1) : `.${e}`;
    return bare.endsWith(o.slice(1));
  });
}
