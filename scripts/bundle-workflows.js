// Prebuild the workflow bundle from the compiled workflows (lib/workflows), so workers and `starry`
// start without running webpack each time. Part of `npm run build`.
const { writeFileSync } = require('node:fs');
const path = require('node:path');
const { bundleWorkflowCode } = require('@temporalio/worker');
const { workflowBundleOptions } = require('../lib/workers/bundle');

const noop = () => undefined;
const logger = { log: noop, trace: noop, debug: noop, info: noop, warn: noop, error: console.error };

bundleWorkflowCode({ ...workflowBundleOptions(), logger })
  .then(({ code }) => writeFileSync(path.join(__dirname, '..', 'lib', 'workflow-bundle.js'), code))
  .catch((err) => {
    console.error(err);
    process.exit(1);
  });
