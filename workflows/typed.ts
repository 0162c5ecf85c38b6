/** Contract errors thrown in a workflow's update handler or validator, as the typed failures clients read. */
import { ApplicationFailure } from '@temporalio/workflow';
import { isRequestError } from '../core/errors';

/**
 * Run a validator body so that a contract error reaches the caller as an ApplicationFailure of its
 * type (`InvalidArgument`, `Refused`): clients tell a bad request from a refusal by type.
 */
export function typed<T>(check: () => T): T {
  try {
    return check();
  } catch (err) {
    if (isRequestError(err)) {
      throw ApplicationFailure.create({
        type: err.type,
        message: err.message,
        nonRetryable: true,
        details: [{ issues: [...err.issues] }],
      });
    }
    throw err;
  }
}
