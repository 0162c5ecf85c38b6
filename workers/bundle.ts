/**
 * How the workflows are bundled, one answer for the prebuilt bundle (`npm run build`), a worker that
 * bundles at start and the tests' shared bundle.
 */
import type { BundleOptions } from '@temporalio/worker';

export function workflowBundleOptions(): Pick<
  BundleOptions,
  'workflowsPath' | 'preloadModules' | 'workflowInterceptorModules'
> & { webpackConfigHook: NonNullable<BundleOptions['webpackConfigHook']> } {
  return {
    // One commit is one version in any directory: modules keep the paths they were found by (a
    // node_modules that is a symlink included), so the code names them relative to the package alone.
    webpackConfigHook: (config) => ({ ...config, resolve: { ...config.resolve, symlinks: false } }),
    workflowsPath: require.resolve('../workflows'),
    // Temporal's OpenTelemetry interceptors, dormant until a task traces (workflows/otel-interceptors.ts).
    // Always bundled: tracing on or off, the bundle (and so the build id) is the same.
    workflowInterceptorModules: [require.resolve('../workflows/otel-interceptors')],
    // Shared by every workflow on a thread instead of evaluated for each (workflows/preload.ts).
    preloadModules: [require.resolve('../workflows/preload')],
  };
}
