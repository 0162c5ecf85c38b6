/**
 * How the workflows are bundled, one answer for the prebuilt bundle (`npm run build`), a worker that
 * bundles at start and the tests' shared bundle.
 */
import type { BundleOptions } from '@temporalio/worker';

export function workflowBundleOptions(): Pick<BundleOptions, 'workflowsPath' | 'preloadModules'> {
  return {
    workflowsPath: require.resolve('../workflows'),
    // Shared by every workflow on a thread instead of evaluated for each (workflows/preload.ts).
    preloadModules: [require.resolve('../workflows/preload')],
  };
}
