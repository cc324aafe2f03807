/**
 * Test helpers for module authors: HTTPS device simulators, a replay server for captured device answers,
 * certificates, the adapter contract kit (with its facts step), database fixtures (PGlite and PostgreSQL),
 * an in-process app and sealed report fixtures (the v1 report and one built by the current code).
 *
 * @module
 */
export * from "./simulator.ts";
export * from "./certs.ts";
export * from "./contract.ts";
export * from "./db.ts";
export * from "./app.ts";
export { SessionRegistry } from "../src/devices/sessions.ts";
export { DEFAULT_LIMITS, type TransportLimits } from "../src/transport/transport.ts";
export { checkApplies, evaluateCheck } from "../src/preflight/evaluate.ts";
export type { CheckResult } from "../src/preflight/types.ts";
export * from "./process.ts";
export * from "./serve.ts";
export * from "./replay.ts";
export * from "./facts.ts";
export * from "./volatile.ts";
export * from "./check_fixture.ts";
// Internals the repository's tests use, one re-export a line (paths follow core/src when files move).
export type { Db } from "../src/db/open.ts";
export type { Services } from "../src/runtime/services.ts";
export { hashSnapshot, LostLockError, type Outcome, PollStore } from "../src/poller/store.ts";
export { DeviceLocks } from "../src/poller/device_locks.ts";
export { decryptAlertWriter } from "../src/runs/alerts.ts";
export { openDatabase } from "../src/db/open.ts";
export { migrate } from "../src/db/open.ts";
export { appliedMigrations } from "../src/db/open.ts";
export { migrateUpTo } from "../src/db/open.ts";
export { verifyReport } from "../src/report/verify.ts";
export { verifyReportBytes } from "../src/report/verify.ts";
export type { DecryptAlert, ReportData } from "../src/report/types.ts";
export { runPreflight } from "../src/preflight/engine.ts";
export { payloadCache } from "../src/lab/read.ts";
export { PayloadCache } from "../src/lab/read.ts";
export { summarize } from "../src/preflight/evaluate.ts";
export { latestAsOfSql } from "../src/lab/read.ts";
export type { PreflightPlan, PreflightResult } from "../src/preflight/types.ts";
export { buildRegistry } from "../src/registry.ts";
export type { LoadedModules, Registry } from "../src/registry.ts";
export type { HashedSnapshot } from "../src/poller/store.ts";
export type { Database } from "../src/db/schema.ts";
export { buildKeyRing } from "../src/runtime/services.ts";
export { migrationProvider } from "../src/db/migrations/mod.ts";
export { TokenStore } from "../src/access/tokens.ts";
export { refusedRoles } from "../src/access/tokens.ts";
export { requiredRole } from "../src/access/tokens.ts";
export { ROLES } from "../src/access/tokens.ts";
export { logger } from "../src/util/log.ts";
export * from "./report_fixture.ts";
export * from "./report_fixture_current.ts";
// Types the exports above name, so that the documented face names no private type.
export type { Evidence } from "../src/preflight/engine.ts";
export type { PayloadEntry } from "../src/lab/read.ts";
export type { PlannedRead } from "../src/preflight/engine.ts";
export type { PreflightOptions } from "../src/preflight/engine.ts";
export type { SelectionReport } from "../src/preflight/engine.ts";
export type { OpenOptions } from "../src/db/open.ts";
export type { ReservedSession } from "../src/db/open.ts";
export type { LoadedModule } from "../src/registry.ts";
export type { RegisteredAdapter } from "../src/registry.ts";
export type { RegisteredCheck } from "../src/registry.ts";
export type { VendorEntry } from "../src/registry.ts";
export type { Stored } from "../src/poller/store.ts";
export type { WriteGuard } from "../src/poller/store.ts";
export type { PollWriteHook } from "../src/poller/store.ts";
export type { Annex } from "../src/report/types.ts";
export type { FigureSource } from "../src/report/types.ts";
export type { ResultFigures } from "../src/report/types.ts";
export type { StartGate } from "../src/report/types.ts";
export type { VerdictReason } from "../src/report/types.ts";
export type { VerdictValue } from "../src/report/types.ts";
export type { Aggregate } from "../src/report/results/aggregate.ts";
export type { InventoryEntry } from "../src/lab/state.ts";
export type { Principal } from "../src/access/tokens.ts";
export type { Role } from "../src/access/tokens.ts";
export type { TokenView } from "../src/access/tokens.ts";
export type { KeyRing } from "../src/devices/store.ts";
export type { VerifyOutcome } from "../src/report/verify.ts";
export type { VerifyFinding } from "../src/report/verify.ts";
export type { Figure } from "../src/report/types.ts";
export type { Selection } from "../src/preflight/engine.ts";
export type { StoredBatch } from "../src/poller/store.ts";
export type { CredentialKey } from "../src/devices/credentials.ts";
export type { StoredPoll } from "../src/poller/store.ts";
export type { LatestRow } from "../src/lab/read.ts";
