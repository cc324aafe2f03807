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
export { checkApplies, type CheckResult, evaluateCheck } from "../src/preflight/engine.ts";
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
export { payloadCache } from "../src/preflight/engine.ts";
export { PayloadCache } from "../src/preflight/engine.ts";
export { summarize } from "../src/preflight/engine.ts";
export { latestAsOfSql } from "../src/preflight/engine.ts";
export type { PreflightPlan, PreflightResult } from "../src/preflight/engine.ts";
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
export * from "./report_fixture.ts";
export * from "./report_fixture_current.ts";
