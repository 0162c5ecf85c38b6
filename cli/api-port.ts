/**
 * The HTTP API's port, taken: the command stops naming the port, who may hold it and the flag that picks
 * another. Going on without the API would leave the README's `curl 127.0.0.1:8080/…` lines reaching
 * whatever holds the port: another checkout's unauthenticated dev API halts that checkout's agents.
 */
import net from 'node:net';
import { EXIT, ExitError } from './common';

/**
 * Bind 127.0.0.1:`port` and let go at once, before anything else starts.
 *
 * @throws ExitError (1) when the port cannot be bound, saying what to do.
 */
export async function checkApiPort(port: number, flag: string): Promise<void> {
  const err = await new Promise<Error | undefined>((resolve) => {
    const probe = net.createServer();
    probe.once('error', resolve);
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(undefined)));
  });
  if (err) throw await apiPortRefusal(port, flag, err);
}

/**
 * The refusal of an API that cannot listen on `port` (`err`, from the bind), naming who answers there.
 * An error of another kind is passed on as it is.
 */
export async function apiPortRefusal(port: number, flag: string, err: unknown): Promise<unknown> {
  const code = (err as NodeJS.ErrnoException).code;
  if (code !== 'EADDRINUSE' && code !== 'EACCES') return err;
  const other = `choose another with ${flag} N${flag === '--api-port' ? ' (0: no API)' : ''}`;
  if (code === 'EACCES')
    return new ExitError(
      `the HTTP API cannot listen on 127.0.0.1:${port} (EACCES: a port below 1024 needs privileges): ${other}`,
      EXIT.FAILED,
    );
  return new ExitError(
    `port ${port} of the HTTP API is in use by ${await holderOf(port)}, so this command's API cannot listen there, ` +
      `and requests to 127.0.0.1:${port} (the README's curl lines) would reach that program, not this folder's agents: ` +
      `${other}, or stop that program (\`ss -ltnp 'sport = :${port}'\` or \`lsof -i :${port}\` names its process)`,
    EXIT.FAILED,
  );
}

/** Who answers on the port: an OpenStarry API (its `/openapi.json`), or a program we cannot name. */
async function holderOf(port: number): Promise<string> {
  // A timer of our own, not AbortSignal.timeout: that one's is unref'd, and a fetch whose socket the holder
  // closed keeps nothing else alive, so the process would end with this question unanswered.
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), 1000);
  try {
    const res = await fetch(`http://127.0.0.1:${port}/openapi.json`, { signal: stop.signal });
    const doc = (await res.json()) as { info?: { title?: string } };
    if (doc.info?.title === 'OpenStarry on Temporal')
      return "an OpenStarry HTTP API (another checkout's `starry dev` or a `starry api`, most likely)";
  } catch {
    // Not HTTP, or not ours.
  } finally {
    clearTimeout(timer);
  }
  return 'another program';
}
