import { Foreground } from "../util/foreground.ts";
import type { Config, PollConfig } from "./config.ts";
import type { Db } from "../db/open.ts";
import type { Registry } from "../registry.ts";
import { DeviceStore, type KeyRing } from "../devices/store.ts";
import { decryptSecret, encryptSecret, keyIdOf } from "../devices/credentials.ts";
import type { SecretCipher } from "../notify/secrets.ts";
import { SessionRegistry } from "../devices/sessions.ts";
import { Metrics } from "../poller/metrics.ts";
import { PollService } from "../poller/cycle.ts";
import type { PollStoreOptions } from "../poller/store.ts";
import { DeviceLocks } from "../poller/device_locks.ts";
import { PollLeases } from "../poller/leases.ts";
import type { TransportLimits } from "../transport/transport.ts";
import { importCredentialKey } from "../devices/credentials.ts";
import { AuditLog, TokenStore } from "../access/tokens.ts";
import { EventBus } from "../events/bus.ts";
import { ReportSignatures, ReportSigningKey } from "../report/sign.ts";
import type { EvidenceServices } from "../report/evidence.ts";
import { PdfRenderer } from "../report/render/pdf.ts";
import { MAKE_PDF_CERTIFICATE, PdfCertificates } from "../report/pdf_certificates.ts";
import type { PdfSigner } from "../report/pdf_sign.ts";
import { StartupError } from "../errors.ts";
import { RunService } from "../runs/service.ts";
import { decryptAlertWriter } from "../runs/alerts.ts";
import { Subscriptions } from "../notify/subscriptions.ts";
import { DeliveryWorker } from "../notify/worker.ts";
import { ReservationService } from "../reservations/service.ts";
import { NetBoxClient } from "../netbox/client.ts";
import type { RunForJournal } from "../netbox/journal.ts";
import { journalQueue, JournalWorker } from "../netbox/journal_worker.ts";
import { sha256Hex } from "../util/hash.ts";

/**
 * What a poller uses (`deno task poll`): devices and their credentials, the poll cycle with its write hooks
 * (decrypt alerts), metrics and live events. It holds no token store and no signing key: a poller host
 * needs only DATABASE_URL and DUT_CRED_ENC_KEY (docs/deploy-postgres.md "Which host holds which secret").
 */
export interface PollServices {
  config: PollConfig;
  db: Db;
  registry: Registry;
  keys: KeyRing;
  sessions: SessionRegistry;
  devices: DeviceStore;
  poller: PollService;
  metrics: Metrics;
  /** Live events (SSE at GET /api/events; a poller publishes them through the database). */
  events: EventBus;
  limits: TransportLimits;
  /**
   * Whether the HTTP API is answering requests: the poll worker and the poll store give way to it
   * (`DUT_POLL_BUSY_CONCURRENCY`; docs/polling.md "The API comes first").
   */
  foreground: Foreground;
  /** Log out every parked session (shutdown; the device store's `releaseAllParked`). */
  releaseAllParked(): Promise<void>;
  /**
   * Stop what the services started (shutdown, before the database closes): end the event streams (the event
   * bus), log out the parked sessions and drop their kept-alive connections, stop the hash workers and close
   * the device-lock session, so no timer of theirs outlives the runtime.
   */
  close(): Promise<void>;
}

/** Everything the HTTP app and its worker share (`serve`, and the admin tools). Built once per process. */
export interface Services extends PollServices {
  /** The parsed server configuration. */
  config: Config;
  /** Named API tokens with roles (and the ADMIN_TOKEN as bootstrap admin). */
  tokens: TokenStore;
  /** The append-only audit log of state-changing requests. */
  audit: AuditLog;
  /** Report signing key and stored signatures (docs/reports.md "Signatures"). */
  signatures: ReportSignatures;
  /**
   * The lab's X.509 certificate and key signing every report.pdf (PAdES B-B); null in a process that serves
   * no PDF (the admin tools).
   */
  pdfSigner: PdfSigner | null;
  /** Every PDF signing certificate the service has used (listed by GET /api/report-keys). */
  pdfCertificates: PdfCertificates;
  /** The warm headless Chromium printing report PDFs (started at the first PDF; `close()` at shutdown). */
  pdf: PdfRenderer;
  /** Test runs: start, finish (the report frozen once), reads. Built once here, used by every route. */
  runs: RunService;
  /** Webhook subscriptions, their delivery log, redelivery and ping (docs/notifications.md). */
  webhooks: Subscriptions;
  /** Testbeds and reservations with leases (docs/reservations.md). */
  reservations: ReservationService;
}

/** The credential key ring from hex keys: `current` encrypts, `previous` (during a rotation) still decrypts. */
export async function buildKeyRing(current: string, previous?: string): Promise<KeyRing> {
  const cur = await importCredentialKey(current);
  const all = [cur];
  if (previous) all.push(await importCredentialKey(previous));
  return { current: cur, all };
}

/** The device credentials' cipher over `keys`, for what lies below devices (webhook secrets, notify/secrets.ts). */
export function secretCipher(keys: KeyRing): SecretCipher {
  return {
    currentKeyId: keys.current.id,
    encrypt: (aad, plaintext) => encryptSecret(keys.current, aad, plaintext),
    decrypt: (aad, stored) => decryptSecret(keys.all, aad, stored),
    keyIdOf,
  };
}

export function transportLimits(config: PollConfig): TransportLimits {
  return {
    connectTimeoutMs: config.DUT_DEVICE_CONNECT_TIMEOUT_MS,
    requestTimeoutMs: config.DUT_DEVICE_REQUEST_TIMEOUT_MS,
    maxResponseBytes: config.DUT_DEVICE_MAX_RESPONSE_BYTES,
    maxJsonDepth: 64,
    extraCa: config.extraCa,
    networks: config.DUT_DEVICE_NETWORKS,
  };
}

/** Write transactions the poll store runs at once on PostgreSQL (BENCHMARKS.md section 2c). */
export const POLL_WRITERS = 2;

/** How long PGlite's idle poll store waits for more results before it writes (BENCHMARKS.md section 2c). */
export const PGLITE_WRITE_LINGER_MS = 5;

/**
 * While the API is busy (and `DUT_POLL_BUSY_CONCURRENCY` is not 0), the poll store waits this long for more
 * results of scheduled polls: a scan then commits about two batches a second, and the device list's answer
 * is rebuilt about as often (BENCHMARKS.md section 7x).
 */
export const BUSY_WRITE_LINGER_MS = 500;

/**
 * How the poll store writes on each back end: PostgreSQL writes the next batch while the previous one commits
 * and sends new payloads as one binary parameter (BENCHMARKS.md sections 2c-2d); PGlite has one session, and
 * its idle store waits {@link PGLITE_WRITE_LINGER_MS} for more results, and in a worker (the only PGlite `Db`
 * with `reclaim`, whatever `DUT_PGLITE_WORKER` said) results arriving during a batch wait the busy linger.
 */
export function pollStoreOptions(db: Pick<Db, "kind" | "reclaim">): Omit<PollStoreOptions, "hooks"> {
  return db.kind === "postgres"
    ? { writers: POLL_WRITERS, lingerMs: 0, binaryPayloads: true }
    : { writers: 1, lingerMs: PGLITE_WRITE_LINGER_MS, binaryPayloads: false, lingerAfterBatch: !!db.reclaim };
}

/** The services of a poller: only the credential key is read (a `Config` fits too: `serve` builds on it). */
export async function buildPollServices(
  config: PollConfig,
  db: Db,
  registry: Registry,
): Promise<PollServices> {
  const keys = await buildKeyRing(config.DUT_CRED_ENC_KEY, config.DUT_CRED_ENC_KEY_PREVIOUS);
  const sessions = new SessionRegistry();
  const limits = transportLimits(config);
  const devices = new DeviceStore(db.kysely, registry, keys, sessions, limits);
  const metrics = new Metrics();
  const events = new EventBus(db, config.DUT_EVENTS_RETENTION_HOURS);
  const foreground = new Foreground();
  const poller = new PollService({
    db: db.kysely,
    devices,
    registry,
    metrics,
    limits,
    deviceTimeoutMs: config.DUT_POLL_DEVICE_TIMEOUT_SECONDS * 1000,
    hashWorkers: config.DUT_POLL_WORKERS,
    locks: db.kind === "postgres" ? new DeviceLocks(db) : undefined,
    leases: new PollLeases(db.kysely, metrics, {
      leaseSeconds: config.DUT_POLL_LEASE_SECONDS ?? 60,
      batch: config.DUT_POLL_CLAIM_BATCH ?? 32,
    }),
    store: {
      ...pollStoreOptions(db),
      ...(config.DUT_POLL_BUSY_CONCURRENCY > 0
        ? {
          foreground,
          busyLingerMs: BUSY_WRITE_LINGER_MS,
        }
        : {}),
      // A writer paused mid-transaction (SIGSTOP, a frozen VM) must not keep its devices' rows locked, and so
      // their leases from being taken over, beyond its lease: PostgreSQL ends its transaction then.
      ...(db.kind === "postgres"
        ? { idleInTransactionMs: (config.DUT_POLL_LEASE_SECONDS ?? 60) * 1000 }
        : {}),
    },
    // The runs feature records decrypt alerts in the poll store's transaction (the poller knows no runs).
    writeHooks: [decryptAlertWriter(registry, events)],
    events,
  });
  return {
    config,
    db,
    registry,
    keys,
    sessions,
    devices,
    poller,
    metrics,
    events,
    limits,
    foreground,
    releaseAllParked: () => devices.releaseAllParked(),
    close: async () => {
      await events.close();
      await devices.releaseAllParked();
      await poller.close();
    },
  };
}

/** Build every service of `serve` (or an admin tool) over an open database and a validated registry. */
export async function buildServices(config: Config, db: Db, registry: Registry): Promise<Services> {
  const base = await buildPollServices(config, db, registry);
  const signatures = new ReportSignatures(
    db.kysely,
    await ReportSigningKey.fromText(config.DUT_REPORT_SIGNING_KEY),
  );
  let pdfSigner: PdfSigner | null = null;
  if (config.pdfSigning) {
    // Loaded only by `serve`: pkijs and the X.509 parser are not needed by the worker.
    const { PdfSigner, PdfSigningConfigError } = await import("../report/pdf_sign.ts");
    try {
      pdfSigner = await PdfSigner.load(config.pdfSigning);
    } catch (e) {
      if (!(e instanceof PdfSigningConfigError)) throw e;
      const name = config.pdfSigning.kind === "pkcs12" ? "DUT_PDF_SIGNING_P12" : "DUT_PDF_SIGNING_CERT";
      throw new StartupError(
        "BAD_CONFIG",
        `${name}: ${e.message}; make a certificate with: ${MAKE_PDF_CERTIFICATE}`,
      );
    }
  }
  const svc: Services = {
    ...base,
    config,
    tokens: new TokenStore(db.kysely, config.ADMIN_TOKEN),
    audit: new AuditLog(db.kysely),
    signatures,
    pdfSigner,
    pdfCertificates: new PdfCertificates(db.kysely, pdfSigner?.info ?? null),
    runs: new RunService(db.kysely, registry, config.DUT_DEFAULT_LICENSE_ID, config.DUT_LAB_NAME),
    webhooks: new Subscriptions(db.kysely, secretCipher(base.keys)),
    reservations: new ReservationService(db.kysely, base.events),
    pdf: new PdfRenderer({
      executablePath: config.DUT_CHROMIUM_PATH,
      concurrency: config.DUT_PDF_CONCURRENCY,
      timeoutMs: config.DUT_PDF_TIMEOUT_SECONDS * 1000,
      memoryLimitBytes: config.DUT_PDF_MEMORY_MB * 1024 * 1024,
    }),
  };
  svc.metrics.watchReservations(svc.reservations);
  svc.metrics.watchWebhooks(() => svc.webhooks.failingCount());
  svc.runs.netboxWriteBack = config.DUT_NETBOX_WRITEBACK === "on";
  if (svc.runs.netboxWriteBack) svc.metrics.watchNetBoxJournal(() => journalQueue(db.kysely));
  return svc;
}

/** What the evidence bundle and replay read, taken from the service's `Services` (the API and the bench build it here). */
export function evidenceServices(svc: Services): EvidenceServices {
  return {
    db: svc.db.kysely,
    registry: svc.registry,
    runs: svc.runs,
    signatures: svc.signatures,
    pdfCertificates: svc.pdfCertificates,
    labName: svc.config.DUT_LAB_NAME,
  };
}

/** The webhook delivery worker of `serve` over its services and configuration (started by `startWebhooks`). */
export function webhookWorker(svc: Services): DeliveryWorker {
  const c = svc.config;
  return new DeliveryWorker(svc.db.kysely, {
    pollMs: c.DUT_WEBHOOK_POLL_MS,
    timeoutMs: c.DUT_WEBHOOK_TIMEOUT_MS,
    maxResponseBytes: c.DUT_WEBHOOK_MAX_RESPONSE_BYTES,
    retryBaseMs: c.DUT_WEBHOOK_RETRY_BASE_MS,
    retryMaxDelayMs: c.DUT_WEBHOOK_RETRY_MAX_DELAY_SECONDS * 1000,
    retryWindowMs: c.DUT_WEBHOOK_RETRY_WINDOW_SECONDS * 1000,
    failingAfter: c.DUT_WEBHOOK_FAILING_AFTER,
    concurrency: c.DUT_WEBHOOK_CONCURRENCY,
    keys: secretCipher(svc.keys),
    networks: svc.limits.networks,
    lookup: svc.limits.lookup,
    extraCa: c.extraCa,
  }, {
    attempt: (result, seconds) => {
      svc.metrics.webhookAttempts.inc({ result });
      svc.metrics.webhookDuration.observe(seconds);
    },
  });
}

/**
 * What a NetBox journal entry of a finished run carries (docs/netbox.md "Writing verdicts back"): the verdict,
 * the report's URL under `origin`, its SHA-256 and the DSSE envelope's digest; null for a run not finished.
 */
export async function runForJournal(
  svc: Services,
  executionId: string,
  origin: string,
): Promise<RunForJournal | null> {
  const run = await svc.runs.get(executionId);
  if (run.status !== "finished" || !run.reportSha256) return null;
  const [envelope] = await svc.signatures.attestations(executionId).catch(() => []);
  return {
    executionId,
    verdict: run.verdict?.value ?? null,
    outcome: run.outcome,
    reportUrl: `${origin.replace(/\/+$/, "")}/api/test-runs/${encodeURIComponent(executionId)}/report.json`,
    reportSha256: run.reportSha256,
    dsseDigest: envelope ? `sha256:${await sha256Hex(envelope.text)}` : null,
    devices: run.labAtStart.devices.map((d) => ({ id: d.id, hostname: d.hostname })),
  };
}

/**
 * The automatic NetBox write-back worker of `serve` (DUT_NETBOX_WRITEBACK=on; started by
 * `startNetBoxWriteBack`), or null when write-back is off. `caPem`: DUT_NETBOX_CA_FILE's text.
 */
export function netboxJournalWorker(svc: Services, caPem?: string): JournalWorker | null {
  const c = svc.config;
  if (c.DUT_NETBOX_WRITEBACK !== "on" || !c.DUT_NETBOX_URL || !c.DUT_NETBOX_TOKEN) return null;
  // No retries inside the client: the queue retries, after NetBox's Retry-After or a backoff.
  const client = new NetBoxClient({
    url: c.DUT_NETBOX_URL,
    token: c.DUT_NETBOX_TOKEN,
    caPem,
    timeoutMs: c.DUT_NETBOX_TIMEOUT_MS,
    retries: 0,
  });
  const origin = c.DUT_PUBLIC_URL ?? `http://localhost:${c.PORT}`;
  return new JournalWorker(svc.db.kysely, client, (id) => runForJournal(svc, id, origin), {
    pollMs: c.DUT_NETBOX_POLL_MS,
    concurrency: 4,
    retryBaseMs: c.DUT_NETBOX_RETRY_BASE_MS,
    retryMaxDelayMs: c.DUT_NETBOX_RETRY_MAX_DELAY_SECONDS * 1000,
    leaseMs: c.DUT_NETBOX_TIMEOUT_MS * 2 + 30_000,
  }, {
    attempt: (result, seconds) => {
      svc.metrics.netboxJournalAttempts.inc({ result });
      svc.metrics.netboxJournalDuration.observe(seconds);
    },
  });
}
