/**
 * The kit for adapter and check authors: HTTPS device simulators with lab controls, certificates, the adapter
 * contract kit (with its facts step), replay of captured device answers, volatile-path helpers, `checkFixture`
 * and `checkCases` for checks, database fixtures (`dbTest` on PGlite and PostgreSQL) and the fixture modules.
 * It re-exports no file of `core/src`; the repository's own harness (serve and lab processes, the in-process
 * app, `childEnv`) lives in the unpublished `core/harness/`.
 *
 * @module
 */
export {
  type Faults,
  type LabControl,
  type LabControls,
  type RecordedRequest,
  type SimHandler,
  type Simulator,
  type SimulatorOptions,
  startSimulator,
} from "./simulator.ts";
export {
  certificateAuthority,
  type CertificateBundle,
  certificateFromPem,
  issueCertificate,
  selfSignedCertificate,
} from "./certs.ts";
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
  type ReplayRoute,
  type ReplayServer,
  startReplayServer,
} from "./replay.ts";
export { FACT_LABELS, readFacts } from "./facts.ts";
export { nonVolatileChanges, unmatchedVolatilePaths } from "./volatile.ts";
export * from "./check_fixture.ts";
export { dbTest, NO_POSTGRES_REASON, openTestDatabase, testBackends, testMigrator } from "./db.ts";
export * from "./fixture_modules.ts";
export { logger, SessionRegistry } from "./sessions.ts";
