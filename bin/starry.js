#!/usr/bin/env node
// The `starry` command: runs the compiled CLI (npm run setup builds it).
const path = require('node:path');
const fs = require('node:fs');

const entry = path.join(__dirname, '..', 'lib', 'cli', 'main.js');
if (!fs.existsSync(entry)) {
  process.stderr.write('starry: the CLI is not built yet. Run `npm run setup` in ' + path.join(__dirname, '..') + '\n');
  process.exit(1);
}
require(entry)
  .main(process.argv.slice(2))
  .then(
    // Exit only once stdout and stderr are flushed: a piped `--json` answer must never be cut short.
    (code) => process.stdout.write('', () => process.stderr.write('', () => process.exit(code))),
    (err) => {
      process.stderr.write('starry: ' + (err && err.stack ? err.stack : String(err)) + '\n');
      process.exit(1);
    },
  );
