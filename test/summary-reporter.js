// Prints plain closing lines after jest's own summary, so any log reader (CI included) sees them in a
// form that does not depend on jest's layout: the ten slowest files and tests (where the run's time
// goes, docs/TESTING.md), then `tests: N passed, N failed`.
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const out = [];
    const files = results.testResults
      .map((f) => ({ name: relative(f.testFilePath), ms: f.perfStats.end - f.perfStats.start }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 10);
    const tests = results.testResults
      .flatMap((f) =>
        f.testResults.map((t) => ({ name: `${relative(f.testFilePath)} › ${t.title}`, ms: t.duration ?? 0 })),
      )
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 10);
    if (results.testResults.length > 1) {
      out.push('\nslowest files:', ...files.map((f) => `  ${seconds(f.ms)}  ${f.name}`));
      out.push('slowest tests:', ...tests.map((t) => `  ${seconds(t.ms)}  ${t.name}`));
    }
    const skipped = results.numPendingTests + results.numTodoTests;
    out.push(
      `\ntests: ${results.numPassedTests} passed, ${results.numFailedTests} failed${skipped ? `, ${skipped} skipped` : ''}`,
    );
    process.stdout.write(out.join('\n') + '\n');
  }
}

function relative(path) {
  const cwd = process.cwd() + '/';
  return path.startsWith(cwd) ? path.slice(cwd.length) : path;
}

function seconds(ms) {
  return `${(ms / 1000).toFixed(1).padStart(6)} s`;
}

module.exports = SummaryReporter;
