// Prints one plain closing line, `tests: N passed, N failed`, after jest's own summary, so any log
// reader (CI included) sees the counts in a form that does not depend on jest's layout.
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    process.stdout.write(
      `\ntests: ${results.numPassedTests} passed, ${results.numFailedTests} failed${skipped ? `, ${skipped} skipped` : ''}\n`,
    );
  }
}
module.exports = SummaryReporter;
