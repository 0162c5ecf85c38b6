/** Two projects: `unit` (pure core/, activities without a server) and `integration` (a real Temporal dev server). */
const transform = {
  '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022' } }],
  // jose (the API's JWT library) ships ES modules only; jest loads CommonJS, so it is compiled like our code.
  '/node_modules/jose/.+\\.js$': [
    '@swc/jest',
    { jsc: { target: 'es2022', parser: { syntax: 'ecmascript' } }, module: { type: 'commonjs' } },
  ],
};
// cdk.out holds synthesized assets (a copy of package.json among them): not modules of this project.
const common = {
  transform,
  transformIgnorePatterns: ['/node_modules/(?!jose/)'],
  modulePathIgnorePatterns: ['<rootDir>/cdk.out/'],
  testEnvironment: 'node',
  moduleFileExtensions: ['ts', 'js', 'json'],
};

module.exports = {
  reporters: ['default', '<rootDir>/test/summary-reporter.js'],
  // One temporary folder for the run's files, removed at its end (unit tests too).
  globalSetup: '<rootDir>/test/run-tmpdir.ts',
  globalTeardown: '<rootDir>/test/run-tmpdir-teardown.ts',
  // A global option in Jest 30 (ignored inside a project): integration tests wait on a real server.
  testTimeout: 120000,
  // Three test files at once on the project's 2 cores (jest's default there is one): an integration
  // test spends most of its time waiting on the server, its workers and the processes it starts, so
  // files overlap well; each has its own task queues, folders and agent ids (the README's Tests).
  maxWorkers: 3,
  projects: [
    {
      ...common,
      displayName: 'unit',
      testMatch: [
        '<rootDir>/core/**/*.test.ts',
        '<rootDir>/activities/**/*.test.ts',
        '<rootDir>/workflows/**/*.test.ts',
        '<rootDir>/cli/**/*.test.ts',
        '<rootDir>/dev/**/*.test.ts',
        '<rootDir>/workers/**/*.test.ts',
        '<rootDir>/infra/**/*.test.ts',
        '<rootDir>/client/**/*.test.ts',
        '<rootDir>/api/**/*.test.ts',
      ],
    },
    {
      ...common,
      displayName: 'integration',
      testMatch: ['<rootDir>/test/**/*.test.ts'],
      globalSetup: '<rootDir>/test/global-setup.ts',
      setupFiles: ['<rootDir>/test/quiet-runtime.ts'],
      globalTeardown: '<rootDir>/test/global-teardown.ts',
    },
  ],
};
