import type { Config } from "./config.ts";
import type { Db } from "./db/open.ts";
import type { Registry } from "./registry.ts";
import { DeviceStore, type KeyRing } from "./devices.ts";
import { SessionRegistry } from "./sessions.ts";
import { Metrics } from "./poller/metrics.ts";
import { PollService } from "./poller/cycle.ts";
import { DeviceLocks } from "./poller/device_locks.ts";
import type { TransportLimits } from "./transport/transport.ts";
import { importCredentialKey } from "./credentials.ts";
import { openTransport } from "./transport/transport.ts";
import type { TlsVerifyMode } from "./adapter.ts";
import { deviceTarget } from "./devices.ts";
import { logger } from "./log.ts";
import { AuditLog, TokenStore } from "./access.ts";
import { EventBus } from "./events.ts";
import type { DeviceRow } from "./devices.ts";
import { ReportSignatures, ReportSigningKey } from "./report/sign.ts";
import { PdfRenderer } from "./report/pdf.ts";

/** Everything the HTTP app and the worker share. Built once per process by `bootstrap`. */
export interface Services {
  config: Config;
  db: Db;
  registry: Registry;
  keys: KeyRing;
  sessions: SessionRegistry;
  devices: DeviceStore;
  poller: PollService;
  metrics: Metrics;
  /** Named API tokens with roles (and the ADMIN_TOKEN as bootstrap admin). */
  tokens: TokenStore;
  /** The append-only audit log of state-changing requests. */
  audit: AuditLog;
  /** Live events (SSE at GET /api/events). */
  events: EventBus;
  limits: TransportLimits;
  /** Report signing key and stored signatures (README "Signatures"). */
  signatures: ReportSignatures;
  /** The warm headless Chromium printing report PDFs (started at the first PDF; `close()` at shutdown). */
  pdf: PdfRenderer;
  /** Log out a session parked for a device (after delete, or at shutdown). Best effort. */
  releaseParked(row: Pick<DeviceRow, "id">, fallback?: DeviceRow): Promise<void>;
  /** Log out every parked session (shutdown). */
  releaseAllParked(): Promise<void>;
  /** Whether this process holds the poll lock (for /metrics). */
  worker?: { holdsLock: boolean };
}

export async function buildKeyRing(current: string, previous?: string): Promise<KeyRing> {
  const cur = await importCredentialKey(current);
  const all = [cur];
  if (previous) all.push(await importCredentialKey(previous));
  return { current: cur, all };
}

export function transportLimits(config: Config): TransportLimits {
  return {
    connectTimeoutMs: config.DUT_DEVICE_CONNECT_TIMEOUT_MS,
    requestTimeoutMs: config.DUT_DEVICE_REQUEST_TIMEOUT_MS,
    maxResponseBytes: config.DUT_DEVICE_MAX_RESPONSE_BYTES,
    maxJsonDepth: 64,
    extraCa: config.extraCa,
  };
}

export async function buildServices(config: Config, db: Db, registry: Registry): Promise<Services> {
  const keys = await buildKeyRing(config.DUT_CRED_ENC_KEY, config.DUT_CRED_ENC_KEY_PREVIOUS);
  const sessions = new SessionRegistry();
  const devices = new DeviceStore(db.kysely, registry, keys, sessions);
  const metrics = new Metrics();
  const limits = transportLimits(config);
  const events = new EventBus(db, config.DUT_EVENTS_RETENTION_HOURS);
  const poller = new PollService({
    db: db.kysely,
    devices,
    registry,
    metrics,
    limits,
    deviceTimeoutMs: config.DUT_POLL_DEVICE_TIMEOUT_SECONDS * 1000,
    locks: db.kind === "postgres" ? new DeviceLocks(db) : undefined,
    events,
  });
  const log = logger("sessions");
  const signatures = new ReportSignatures(
    db.kysely,
    await ReportSigningKey.fromText(config.DUT_REPORT_SIGNING_KEY),
  );
  const svc: Services = {
    config,
    db,
    registry,
    keys,
    sessions,
    devices,
    poller,
    metrics,
    tokens: new TokenStore(db.kysely, config.ADMIN_TOKEN),
    audit: new AuditLog(db.kysely),
    events,
    limits,
    signatures,
    pdf: new PdfRenderer({
      executablePath: config.DUT_CHROMIUM_PATH,
      concurrency: config.DUT_PDF_CONCURRENCY,
      timeoutMs: config.DUT_PDF_TIMEOUT_SECONDS * 1000,
    }),
    async releaseParked(row, full) {
      const parked = sessions.take(row.id);
      if (parked === undefined || !full) return;
      const reg = registry.adapters.get(full.vendor);
      if (!reg?.adapter.release) return;
      const transport = openTransport(
        {
          baseUrl: full.base_url,
          tlsVerifyMode: full.tls_verify_mode as TlsVerifyMode,
          pinnedCertSha256: full.pinned_cert_sha256,
        },
        limits,
        { signal: AbortSignal.timeout(10_000) },
      );
      try {
        await reg.adapter.release({
          device: deviceTarget(full),
          http: transport,
          sessions: new SessionRegistry().scope(full.id, "release"),
          log,
          signal: AbortSignal.timeout(10_000),
        }, parked);
      } catch (e) {
        log.warn("Could not log out the parked session of {hostname}: {error}", {
          hostname: full.hostname,
          error: String(e),
        });
      } finally {
        transport.close();
      }
    },
    async releaseAllParked() {
      const ids = sessions.deviceIds();
      if (!ids.length) return;
      const rows = await db.kysely.selectFrom("devices").selectAll().where("id", "in", ids).execute();
      await Promise.allSettled(rows.map((r) => svc.releaseParked(r, r)));
    },
  };
  return svc;
}
