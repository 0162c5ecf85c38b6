/**
 * The client's failures: what Temporal's errors mean to a caller of AgentClient or BudgetClient — a
 * refused update as the family's error (core/errors/request.ts), an unknown workflow, a query no worker
 * answered in time, a namespace without the search attributes the agents write.
 */
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Connection } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import {
  InvalidArgumentError,
  NotFoundError,
  PermissionDeniedError,
  RefusedError,
  requestErrorType,
  type RequestError,
} from '../core/errors';
import { missingSearchAttributes, SEARCH_ATTRIBUTES } from '../workflows/search-attributes';

/**
 * A failed update as the family's error: the workflow's validators fail with an ApplicationFailure
 * whose type is `InvalidArgument`, `NotFound`, `Refused` or `PermissionDenied` (core/errors/request.ts); anything else is passed on.
 */
export function updateFailure(err: unknown, what: string): unknown {
  if (!(err instanceof WorkflowUpdateFailedError)) return err;
  const cause = err.cause;
  const type = cause instanceof ApplicationFailure ? requestErrorType(cause.type) : undefined;
  const message = `${what}: ${causeMessage(err)}`;
  const issues =
    (type ? ((cause as ApplicationFailure).details?.[0] as { issues?: string[] } | undefined)?.issues : undefined) ??
    [];
  if (type === 'InvalidArgument') return new InvalidArgumentError(message, { cause: err, issues });
  if (type === 'NotFound') return new NotFoundError(message, { cause: err });
  if (type === 'PermissionDenied') return new PermissionDeniedError(message, { cause: err, issues });
  return new RefusedError(message, { cause: err, issues }) as RequestError;
}

function causeMessage(err: Error): string {
  let e: unknown = err;
  while ((e as Error).cause) e = (e as Error).cause;
  return (e as Error).message;
}

/** The same answer for a task workflow that does not exist and one of another tenant. */
export function noTaskWorkflow(workflowId: string, cause?: unknown): NotFoundError {
  return new NotFoundError(
    `no task workflow ${workflowId}: task workflow ids look like agent-<agentId>-task-<n> (see \`starry status <agent>\`)`,
    cause !== undefined ? { cause } : undefined,
  );
}

/**
 * A start the server refused because the namespace lacks search attributes the agents write (a plain
 * `temporal server start-dev`, a new cloud namespace): what is missing and the command that registers it
 * (`missingSearchAttributes`), never Temporal's own text. The HTTP API answers it 503 without
 * `Retry-After`: only an operator's command fixes it.
 */
export class SearchAttributesMissingError extends Error {
  constructor(
    readonly namespace: string,
    readonly missing: readonly string[],
    options?: { cause?: unknown },
  ) {
    super(missingSearchAttributes(namespace, missing), options);
    this.name = 'SearchAttributesMissingError';
  }
}

// Temporal's refusals of an unregistered attribute: "Namespace default has no mapping defined for search
// attribute AgentId" (a start), "search attribute Tenant is not defined" (older servers, other paths).
const UNREGISTERED = [/no mapping defined for search attribute (\w+)/i, /search attribute (\w+) is not defined/i];

/** The search attribute a Temporal error says is not registered, if it says so (through its causes). */
export function unregisteredSearchAttribute(err: unknown): string | undefined {
  for (let e: unknown = err, i = 0; e && i < 5; i++, e = (e as { cause?: unknown }).cause) {
    const message = (e as Error).message ?? '';
    for (const re of UNREGISTERED) {
      const name = re.exec(message)?.[1];
      if (name) return name;
    }
  }
  return undefined;
}

/**
 * The error to throw for a start Temporal refused for an unregistered search attribute: every one of
 * ours the namespace lacks (listed, so the command registers them all at once; the one named when the
 * list cannot be read). Undefined for any other error.
 */
export async function searchAttributesFailure(
  err: unknown,
  connection: Pick<Connection, 'operatorService'>,
  namespace: string,
): Promise<SearchAttributesMissingError | undefined> {
  const named = unregisteredSearchAttribute(err);
  if (!named) return undefined;
  const present = await connection.operatorService
    .listSearchAttributes({ namespace })
    .then((r) => Object.keys(r.customAttributes ?? {}))
    .catch(() => undefined);
  const missing = present ? Object.keys(SEARCH_ATTRIBUTES).filter((n) => !present.includes(n)) : [];
  return new SearchAttributesMissingError(namespace, missing.length ? missing : [named], { cause: err });
}

/** gRPC's DEADLINE_EXCEEDED. */
export const grpcStatus = { DEADLINE_EXCEEDED: 4 } as const;

/** A query that no worker answered in time (busy or absent): the server's DEADLINE_EXCEEDED, wrapped. */
export function isQueryTimeout(err: unknown): boolean {
  const cause = (err as { cause?: { code?: number } }).cause;
  return (
    (err as { code?: number }).code === grpcStatus.DEADLINE_EXCEEDED || cause?.code === grpcStatus.DEADLINE_EXCEEDED
  );
}

/** The service's NOT_FOUND, from a raw workflowService call (gRPC status 5) or the SDK's wrapper. */
export function isNotFoundStatus(err: unknown): boolean {
  return (
    err instanceof WorkflowNotFoundError ||
    (err as { name?: string }).name === 'WorkflowNotFoundError' ||
    (err as { code?: unknown }).code === 5
  );
}
