/**
 * The declared face of the operator tools and the generators in `tools/` (not published: the export map of
 * `core/deno.json` does not list it). The tools that open the database reach prune, compact, backup and
 * restore, credential key rotation, signing key rotation and API tokens here; the generators reach the
 * configuration schema, the lab schema, the PGlite template, the version and the registry enum here.
 * `deno task boundaries` lets `tools/` reach core through the published faces, this file and
 * `core/verify.ts` only.
 *
 * @module
 */
// Prune, compact, backup and restore.
export { pruneSnapshots } from "./src/snapshots/prune.ts";
export { compactSnapshots } from "./src/snapshots/compact.ts";
export { readBackup, restoreBackup, RestoreRefused, writeBackup } from "./src/backup/archive.ts";
export { appliedMigrations, migrateUpTo } from "./src/db/open.ts";
// Key rotation: device credentials, report and PDF signing keys; API tokens.
export {
  type CredentialKey,
  decryptSecret,
  importCredentialKey,
  keyIdOf,
} from "./src/devices/credentials.ts";
export { reencryptCredentials } from "./src/devices/key_rotation.ts";
export { reencryptWebhookSecrets } from "./src/notify/secrets.ts";
export { secretCipher } from "./src/runtime/services.ts";
export { MAKE_PDF_CERTIFICATE } from "./src/report/pdf_certificates.ts";
export { generatePdfSigningMaterial, PdfSigner } from "./src/report/pdf_sign.ts";
export { generateSigningKey, ReportSigningKey } from "./src/report/sign.ts";
export { lockDataDir } from "./src/runtime/datadir.ts";
export { EnvSchema, parseEnv } from "./src/runtime/config.ts";
export { ROLES } from "./src/access/tokens.ts";
export { ConflictError, DomainError } from "./src/errors.ts";
export { HttpProblem } from "./src/http/problem.ts";
// Generators.
export { REGISTRY_ENUM } from "./src/api/registry_enum.ts";
export { TEMPLATE_URL } from "./src/db/template.ts";
export { buildTemplate } from "./src/db/template_build.ts";
export { LAB_SCHEMA_URL, labJsonSchemaText } from "./src/lab/file.ts";
export { CORE_VERSION, coreSatisfies } from "./src/version.ts";
// The poll instances tool.
export { listPollInstances, type PollInstance } from "./src/poller/leases.ts";
// The tools that open the database or start the runtime: the opened database, the migrations, and what a
// handle of `@dutlab/core/runtime` holds (its configuration, database and services).
export { migrateOnly, openForTool, type ToolDatabase } from "./src/runtime/database.ts";
export { migrate } from "./src/db/open.ts";
export { started as runtimeInternals } from "./src/runtime/opaque.ts";
