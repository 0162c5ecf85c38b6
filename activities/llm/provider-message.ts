/**
 * The provider's own words from an HTTP error body, for the task's error message: OpenAI, llama.cpp and
 * Vertex send `{ error: { message } }` (Vertex adds `status`), vLLM `{ message }`, others plain text.
 */

const MAX_CHARS = 500;

/**
 * Extract a readable message from an error body.
 *
 * ```ts
 * providerMessage('{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}', 429)
 * // 'RESOURCE_EXHAUSTED: Quota exceeded'
 * ```
 */
export function providerMessage(bodyText: string, status: number): string {
  let message: unknown;
  try {
    const json = JSON.parse(bodyText) as {
      error?: { message?: unknown; status?: unknown } | string;
      message?: unknown;
      detail?: unknown;
    };
    if (typeof json.error === 'string') message = json.error;
    else if (json.error && typeof json.error.message === 'string') {
      message =
        typeof json.error.status === 'string' && json.error.status
          ? `${json.error.status}: ${json.error.message}`
          : json.error.message;
    } else message = json.message ?? json.detail;
  } catch {
    message = bodyText.trim();
  }
  const text = typeof message === 'string' && message ? message : `the server answered ${status} without a message`;
  return text.length > MAX_CHARS ? `${text.slice(0, MAX_CHARS)}…` : text;
}
