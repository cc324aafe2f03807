/**
 * The internals the repository's own cross-process tests (`tests/e2e`, `tests/gate`) and benchmarks (`bench/`)
 * reach, one module a line. Not published: the export map of `core/deno.json` does not list `core/harness/`,
 * and `deno task boundaries` lets `tests/` and `bench/` reach core only through the published faces,
 * `core/ops.ts` and this folder. A test of one room lives beside that room and imports it by path instead.
 *
 * @module
 */
export { refusedRoles, ROLES } from "../src/access/tokens.ts";
export type { AdapterDefinition, CollectedSnapshot } from "../src/adapter.ts";
export { readBackup, restoreBackup, writeBackup } from "../src/backup/archive.ts";
export { CONTROLLER, FIREWALL, serves } from "../src/capability.ts";
export { migrationProvider } from "../src/db/migrations/mod.ts";
export {
  appliedMigrations,
  type Db,
  migrate,
  migrateUpTo,
  openDatabase,
  PGLITE_SHARED_BUFFERS,
  scopedMigrator,
} from "../src/db/open.ts";
export { withNamedStatements } from "../src/db/pglite_statements.ts";
export type { Database } from "../src/db/schema.ts";
export { encryptSecret, importCredentialKey, keyIdOf } from "../src/devices/credentials.ts";
export { reencryptCredentials } from "../src/devices/key_rotation.ts";
export type { DeviceRow } from "../src/devices/store.ts";
export { createApp } from "../src/http/app.ts";
export { INPUT_LIMITS } from "../src/http/input_guard.ts";
export { LabFile } from "../src/lab/file.ts";
export { latestAsOfSql, latestSql, payloadCache } from "../src/lab/read.ts";
export { type PollResult, PollService } from "../src/poller/cycle.ts";
export { hashSnapshot, PollStore } from "../src/poller/store.ts";
export { POLL_LOCK_CLASS, pollLockKey, PollWorker } from "../src/poller/worker.ts";
export { pollLog } from "../src/poller/poll_log.ts";
export { refusalLog } from "../src/http/auth.ts";
export { runPreflight } from "../src/preflight/engine.ts";
export { checkApplies, evaluateCheck } from "../src/preflight/evaluate.ts";
export type { CheckResult, PreflightPlan, PreflightResult } from "../src/preflight/types.ts";
export { buildRegistry, type LoadedModules, type Registry } from "../src/registry.ts";
export { collectReplayInputs, evidenceBundle } from "../src/report/evidence.ts";
export { readBundleArchive, replayInputsOf } from "../src/report/evidence_read.ts";
export { generatePdfSigningMaterial, PdfSigner } from "../src/report/pdf_sign.ts";
export { renderReportPage } from "../src/report/render/page.tsx";
export { attachEvidence, PdfRenderer, proportionalBytes, residentBytes } from "../src/report/render/pdf.ts";
export { type ReplayInputs, replayReport } from "../src/report/replay.ts";
export { clearReportCache, compareRuns, type Comparison } from "../src/report/results/compare.ts";
export { jsonAnnex, sealReport } from "../src/report/seal.ts";
export { generateSigningKey, pae, PAYLOAD_TYPE, ReportSigningKey, signReport } from "../src/report/sign.ts";
export type { DecryptAlert, ReportData } from "../src/report/types.ts";
export { verifyReport, verifyReportBytes } from "../src/report/verify.ts";
export { decryptAlertWriter } from "../src/runs/alerts.ts";
export { RunService } from "../src/runs/service.ts";
export { enqueueEvent } from "../src/notify/outbox.ts";
export { type Config, parseEnv, pdfSigningFromEnv } from "../src/runtime/config.ts";
export { DEFAULT_PGLITE_WORKER } from "../src/runtime/early_open.ts";
export { setupLogging } from "../src/runtime/logging.ts";
export {
  BUSY_CPU_SHARE,
  IDLE_CPU_SHARE,
  MIN_GROWTH_BYTES,
  ReclaimPolicy,
  startIdleReclaimer,
} from "../src/runtime/idle.ts";
export {
  buildKeyRing,
  buildServices,
  evidenceServices,
  pollStoreOptions,
  type Services,
  webhookWorker,
} from "../src/runtime/services.ts";
export { listChanges } from "../src/snapshots/changes.ts";
export { compactSnapshots } from "../src/snapshots/compact.ts";
export { diffPayloads } from "../src/snapshots/diff.ts";
export { pruneSnapshots } from "../src/snapshots/prune.ts";
export { remarkAll } from "../src/snapshots/remark.ts";
export { reconcilePatternSets } from "../src/snapshots/stable.ts";
export { listSnapshots } from "../src/snapshots/store.ts";
export { patternSetKey, volatileFor } from "../src/snapshots/volatile.ts";
export { canonicalJson, jcsSha256, sha256Hex } from "../src/util/hash.ts";
export { encodeCursor } from "../src/util/paging.ts";
