/**
 * The client's failures: what Temporal's errors mean to a caller of AgentClient or BudgetClient — a
 * refused update as the family's error (core/errors/request.ts), an unknown workflow, a query no worker
 * answered in time, a namespace without the `Tenant` search attribute.
 */
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import {
  InvalidArgumentError,
  NotFoundError,
  PermissionDeniedError,
  RefusedError,
  requestErrorType,
  type RequestError,
} from '../core/errors';

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
 * A tenant's agent started on a namespace without the `Tenant` search attribute: the server refuses the
 * start (INVALID_ARGUMENT). Undefined for any other error.
 */
export function tenantNotRegistered(err: unknown): Error | undefined {
  for (let e: unknown = err, i = 0; e && i < 5; i++, e = (e as { cause?: unknown }).cause) {
    if (/search attribute Tenant is not defined/i.test((e as Error).message ?? '')) {
      return new Error(
        "this namespace has no Tenant search attribute, which a tenant's agent carries: register it (Keyword) once, " +
          'as docs/DEPLOY.md step 1 shows, or with ensureSearchAttributes',
        { cause: err },
      );
    }
  }
  return undefined;
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
