/**
 * The kit for adapter and check authors: HTTPS device simulators with lab controls, certificates, the adapter
 * contract kit (with its facts step), replay of captured device answers, volatile-path helpers, `checkFixture`
 * and `checkCases` for checks, and the fixture modules. It stays small (at most 30 names, counted by
 * `core/testing/mod_test.ts`): option and record types are spelled out where they are used, and a helper
 * family is one object (`certificates`). The session registry an adapter test passes to `connectTo` is
 * `SessionRegistry` of `@dutlab/core`. It re-exports no file of `core/src`; the repository's
 * own harness (serve and lab processes, the in-process app, `childEnv`, the database fixtures `dbTest` and
 * `openTestDatabase` on PGlite and PostgreSQL) lives in the unpublished `core/harness/`.
 *
 * @module
 */
export { type LabControls, Simulator, type SimulatorOptions, startSimulator } from "./simulator.ts";
export { type CertificateBundle, certificates } from "./certs.ts";
export {
  type ConnectedSim,
  connectTo,
  pollOnce,
  releaseParked,
  runAdapterContract,
  type SimulatedDevice,
} from "./contract.ts";
export {
  type ExpectedCase,
  replayCase,
  type ReplayManifest,
  type ReplayServer,
  startReplayServer,
} from "./replay.ts";
export { readFacts } from "./facts.ts";
export { nonVolatileChanges, unmatchedVolatilePaths } from "./volatile.ts";
export {
  type CheckCase,
  checkCases,
  type CheckFixture,
  checkFixture,
  type FixtureRunOptions,
} from "./check_fixture.ts";
export { fixtureModules, startFixtureDevice } from "./fixture_modules.ts";
export { logger } from "./sessions.ts";
