/**
 * The kit for adapter and check authors: HTTPS device simulators with lab controls, certificates, the adapter
 * contract kit (with its facts step), replay of captured device answers, volatile-path helpers, `checkFixture`
 * and `checkCases` for checks, and the fixture modules. It re-exports no file of `core/src`; the repository's
 * own harness (serve and lab processes, the in-process app, `childEnv`, the database fixtures `dbTest` and
 * `openTestDatabase` on PGlite and PostgreSQL) lives in the unpublished `core/harness/`.
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
export * from "./fixture_modules.ts";
export { logger, SessionRegistry } from "./sessions.ts";
