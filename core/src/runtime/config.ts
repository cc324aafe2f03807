import { z } from "zod";
import { DEFAULT_DATA_DIR, DEFAULT_PGLITE_WORKER } from "./early_open.ts";
import { StartupError } from "../errors.ts";
import { parseSigningKey } from "../report/sign.ts";
import { MAKE_PDF_CERTIFICATE, type PdfSigningMaterial } from "../report/pdf_certificates.ts";
import { pemBlocks } from "../util/pem.ts";
import { fromBase64 } from "../util/encoding.ts";
import { netboxEnv } from "./config_netbox.ts";
import { type DeviceNetworks, parseDeviceNetworks, UNLISTED } from "../transport/networks.ts";

const HEX64 = /^[0-9a-fA-F]{64}$/;
const int = (min: number, max: number, def: number) =>
  z.string().trim().regex(/^\d+$/, "must be a whole number").transform(Number)
    .pipe(z.number().int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`))
    .optional().transform((v) => v ?? def);
/** The one-line command that prints a fresh secret (64 hex characters), runnable where Node.js is. */
export const GENERATE_SECRET = `node -e 'console.log(require("crypto").randomBytes(32).toString("hex"))'`;
const key = z.string().trim().regex(
  HEX64,
  `must be exactly 64 hex characters (32 bytes); generate one with: ${GENERATE_SECRET}`,
);
/** A listen address: an IPv4 or IPv6 address or a host name, without scheme, brackets or port. */
const host = z.string().trim().min(1).refine(
  (v) =>
    z.ipv4().safeParse(v).success || z.ipv6().safeParse(v).success ||
    (!/^[\d.]+$/.test(v) && z.hostname().safeParse(v).success),
  "must be an IP address or a host name without scheme or port, like 0.0.0.0, 127.0.0.1, :: or localhost",
);
/** The one-line command that prints a fresh report signing key (base64 of its PKCS#8 DER). */
export const GENERATE_SIGNING_KEY = "openssl genpkey -algorithm ed25519 -outform DER | base64 -w0";
const signingKey = z.string().trim().refine((v) => parseSigningKey(v) !== null, {
  message:
    `must be an Ed25519 private key: base64 of its PKCS#8 DER or PEM; generate one with: ${GENERATE_SIGNING_KEY}`,
});

/** `DUT_DEVICE_NETWORKS`: unset gives {@link UNLISTED}; each bad entry is one issue naming it. */
const deviceNetworks = z.string().optional().transform((v, ctx): DeviceNetworks => {
  if (v === undefined) return UNLISTED;
  const r = parseDeviceNetworks(v);
  if ("networks" in r) return r.networks;
  for (const message of r.errors) ctx.addIssue({ code: "custom", message });
  return z.NEVER;
});

const pdfCert = z.string().trim().refine((v) => (pemBlocks(v, "CERTIFICATE")?.length ?? 0) > 0, {
  message: "must be an X.509 certificate as PEM (-----BEGIN CERTIFICATE-----, the chain may follow), or " +
    `base64 of its DER or PEM; make one with: ${MAKE_PDF_CERTIFICATE}`,
});
const pdfKey = z.string().trim().refine((v) => pemBlocks(v, "PRIVATE KEY")?.length === 1, {
  message:
    "must be one unencrypted PKCS#8 private key as PEM (-----BEGIN PRIVATE KEY-----), or base64 of its " +
    "DER or PEM (convert another form with: openssl pkcs8 -topk8 -nocrypt -in key.pem)",
});
const pdfP12 = z.string().trim().regex(/^[A-Za-z0-9+/\s]+={0,2}$/, {
  message: "must be base64 of a PKCS#12 (.p12) file: base64 -w0 lab.p12",
});

/**
 * Every environment variable dutlab reads, parsed once at start (docs/configuration.md). Each field documents
 * itself with `.meta()`: `description` is the table's meaning (Markdown); `defaultLabel` is its default column
 * where the schema has no literal default (`unset`, `generated (embedded)`, a default applied elsewhere),
 * else the column shows what `EnvSchema.parse({})` gives. `deno task docs:config` writes the table.
 */
export const EnvSchema = z.object({
  PORT: int(1, 65535, 8080).meta({ description: "HTTP port (1-65535)" }),
  HOST: host.default("0.0.0.0").meta({
    description: "listen address: an IPv4/IPv6 address or a host name (no scheme, brackets or port)",
  }),
  DATABASE_URL: z.string().trim().regex(/^postgres(ql)?:\/\/.+/, "must be a postgres:// or postgresql:// URL")
    .optional().meta({
      description: "`postgres://…` to use a PostgreSQL server (node-postgres); unset = embedded PGlite",
      defaultLabel: "unset",
    }),
  DUT_DATA_DIR: z.string().trim().min(1).default(DEFAULT_DATA_DIR).meta({
    description: "PGlite data, lock file, generated secrets and the lab's state (embedded mode)",
  }),
  DUT_PGLITE_SHARED_BUFFERS: z.string().trim().regex(
    /^\d{1,7}(kB|MB|GB)$/,
    "must be a size with its unit, like 32MB (kB, MB or GB)",
  ).refine((v) => {
    const m = /^(\d+)(kB|MB|GB)$/.exec(v);
    if (!m) return true; // the format line above already says what is wrong
    const kb = Number(m[1]) * ({ kB: 1, MB: 1024, GB: 1024 * 1024 } as const)[m[2] as "kB" | "MB" | "GB"];
    return kb >= 128 && kb <= 4 * 1024 * 1024;
  }, "must be between 128kB and 4GB").optional().meta({
    description:
      "embedded PGlite's buffer pool (128kB-4GB, with unit kB, MB or GB); PGlite zeroes it at every start, so larger costs start-up time and resident memory (BENCHMARKS.md section 7)",
    defaultLabel: "`16MB`",
  }),
  DUT_PGLITE_WORKER: z.enum(["on", "off"], { message: 'must be "on" or "off"' }).default(
    DEFAULT_PGLITE_WORKER,
  ).meta({
    description:
      "`on` runs embedded PGlite in a Web Worker, off the event loop that serves HTTP and polls: less main-thread CPU per poll, a faster first scan and, during a scan, faster dashboard reads, for about 75 MiB more at the peak of a burst; `off` runs it in the main thread (BENCHMARKS.md section 7x)",
  }),
  ADMIN_TOKEN: z.string().trim().min(
    24,
    `must be at least 24 characters; generate one with: ${GENERATE_SECRET}`,
  )
    .optional().meta({
      description:
        "bearer token of the admin API, at least 24 characters; **required for `serve`** with `DATABASE_URL` (docs/deploy-postgres.md)",
      defaultLabel: "generated (embedded)",
    }),
  DUT_CRED_ENC_KEY: key.optional().meta({
    description:
      "AES-256 key for device credentials: exactly 64 hex characters (32 bytes); **required for `serve` and `poll`** with `DATABASE_URL`",
    defaultLabel: "generated (embedded)",
  }),
  DUT_CRED_ENC_KEY_PREVIOUS: key.optional().meta({
    description: "the previous key during a rotation (64 hex)",
    defaultLabel: "unset",
  }),
  DUT_REPORT_SIGNING_KEY: signingKey.optional().meta({
    description:
      "Ed25519 key signing reports: base64 of its PKCS#8 DER, or PEM; **required for `serve`** with `DATABASE_URL`. Generate one: `openssl genpkey -algorithm ed25519 -outform DER | base64 -w0`",
    defaultLabel: "generated (embedded)",
  }),
  DUT_PDF_SIGNING_CERT: pdfCert.optional().meta({
    description:
      "X.509 certificate signing `report.pdf` (PAdES, docs/reports.md): PEM (chain may follow) or its base64; **required for `serve`** with `DATABASE_URL`",
    defaultLabel: "generated (embedded)",
  }),
  DUT_PDF_SIGNING_KEY: pdfKey.optional().meta({
    description: "its private key: unencrypted PKCS#8 PEM, or base64 of it",
    defaultLabel: "generated (embedded)",
  }),
  DUT_PDF_SIGNING_P12: pdfP12.optional().meta({
    description:
      "instead of the two above: base64 of a PKCS#12 file with the key and certificate (`base64 -w0 lab.p12`)",
    defaultLabel: "unset",
  }),
  DUT_PDF_SIGNING_P12_PASSWORD: z.string().optional().meta({
    description: "the PKCS#12 file's password",
    defaultLabel: "unset (empty)",
  }),
  DUT_API_POLLER_DISABLE: z.enum(["0", "1"], { message: 'must be "0" or "1"' }).default("0").meta({
    description: "`1`: no scheduled polling (one notice at start); manual snapshots still work",
  }),
  DUT_POLL_SCAN_SECONDS: int(1, 3600, 30).meta({ description: "worker scan period" }),
  DUT_POLL_CONCURRENCY: int(1, 1024, 64).meta({ description: "devices polled at once by one instance" }),
  DUT_POLL_BUSY_CONCURRENCY: int(0, 1024, 1).meta({
    description:
      'while the HTTP API answers requests, the worker starts a poll only while fewer are running (docs/polling.md "The API comes first"); `0`: polls never give way',
  }),
  DUT_POLL_LEASE_SECONDS: int(5, 3600, 60).meta({
    description:
      'length of a device\'s poll lease (docs/polling.md "Several poll instances"); must exceed DUT_POLL_DEVICE_TIMEOUT_SECONDS',
  }),
  DUT_POLL_CLAIM_BATCH: int(1, 1024, 32).meta({
    description: "due devices one poll instance claims per round trip (`FOR UPDATE SKIP LOCKED`)",
  }),
  DUT_POLL_WORKERS: int(0, 16, 0).meta({
    description:
      "hash workers (Web Workers, 0-16) that compute the poll cycle's canonical JSON, SHA-256 and stable hashes; `0`: on the main thread (BENCHMARKS.md section 1x)",
  }),
  DUT_POLL_DEVICE_TIMEOUT_SECONDS: int(1, 3600, 25).meta({
    description: "time limit of one device's poll cycle (and of a connection test)",
  }),
  DUT_SHUTDOWN_GRACE_SECONDS: int(0, 600, 20).meta({
    description: "on SIGTERM/SIGINT, how long running polls may finish",
  }),
  DUT_IDLE_RECLAIM_SECONDS: int(0, 3600, 5).meta({
    description:
      "`serve`, `poll`: every so many seconds, when idle (<5 % CPU) after a burst (>20 %) and grown 16 MiB, a GC and `malloc_trim` (`0`: off; BENCHMARKS.md 7x)",
  }),
  DUT_SNAPSHOT_COMPACTION: z.enum(["on", "off"], { message: 'must be "on" or "off"' }).default("on").meta({
    description:
      "`off`: `serve` does not move snapshots stored before the narrow layout in the background (`npx -y deno@2.9.6 task compact` does; docs/data.md)",
  }),
  DUT_SNAPSHOT_COMPACTION_BATCH: int(100, 100_000, 2000).meta({
    description: "old snapshots moved per transaction by that background job (100-100000)",
  }),
  DUT_DEVICE_CONNECT_TIMEOUT_MS: int(100, 120_000, 5_000).meta({
    description: "TCP+TLS connect limit per device connection",
  }),
  DUT_DEVICE_REQUEST_TIMEOUT_MS: int(100, 600_000, 15_000).meta({ description: "limit per device request" }),
  DUT_DEVICE_MAX_RESPONSE_BYTES: int(1024, 256 * 1024 * 1024, 8 * 1024 * 1024).meta({
    description: "largest device answer accepted (8 MiB); JSON nesting is capped at 64",
  }),
  DUT_DEVICE_NETWORKS: deviceNetworks.meta({
    description:
      "where devices may be: CIDRs, addresses, host patterns (`10.20.0.0/16,*.mgmt.lab`), checked at connect; " +
      "production: the lab's management networks (docs/security.md)",
    defaultLabel: "all but link-local",
  }),
  DUT_TLS_CA_FILE: z.string().trim().min(1).optional().meta({
    description: "PEM bundle trusted in `strict` mode in addition to the system store",
    defaultLabel: "unset",
  }),
  DUT_CORS_ORIGINS: z.string().trim().optional().transform((v) =>
    v ? v.split(",").map((s) => s.trim()).filter(Boolean) : []
  ).pipe(z.array(z.url("must be a comma-separated list of origins like https://dash.example"))).meta({
    description: "comma-separated origins allowed to call the API from a browser",
    defaultLabel: "unset (CORS off)",
  }),
  DUT_BODY_LIMIT_BYTES: int(1024, 64 * 1024 * 1024, 1024 * 1024).meta({
    description: "request body limit (413 above it)",
  }),
  DUT_LOG_FORMAT: z.enum(["text", "json"], { message: 'must be "text" or "json"' }).default("text").meta({
    description: "`json`: only JSON lines on stderr (the `listening` line and start-up errors included)",
  }),
  DUT_LOG_LEVEL: z.enum(["debug", "info", "warning", "error"], {
    message: "must be one of debug, info, warning, error",
  }).default("info").meta({ description: "`debug`, `info`, `warning`, `error`" }),
  DUT_PUBLIC_URL: z.url("must be an absolute URL like https://dutlab.example").optional().meta({
    description: "base URL used in report share links",
    defaultLabel: "request origin",
  }),
  DUT_SHARE_LINK_TTL_SECONDS: int(60, 30 * 86400, 86400).meta({
    description: "lifetime of a report share link",
  }),
  DUT_CHROMIUM_PATH: z.string().trim().min(1).optional().meta({
    description: "Chromium binary for `report.pdf` (then `/usr/bin/chromium-browser`)",
    defaultLabel: "`/usr/bin/chromium`",
  }),
  DUT_PDF_CONCURRENCY: int(1, 64, 2).meta({
    description: "PDFs rendered at once (one warm browser, one tab each); more requests wait",
  }),
  DUT_PDF_TIMEOUT_SECONDS: int(1, 600, 30).meta({
    description: "time limit of one PDF, waiting included (503 beyond it; the browser is then stopped)",
  }),
  DUT_PDF_MEMORY_MB: int(128, 65536, 1024).meta({
    description:
      "memory bound of the PDF browser (proportional memory, Pss, of all its processes); past it the render gets a 503 " +
      "and the browser is stopped",
  }),
  DUT_EVENTS_RETENTION_HOURS: int(1, 720, 24).meta({
    description: "how long live events are kept for `Last-Event-ID` resumption (1-720)",
  }),
  DUT_EVENTS_FLUSH_MS: int(0, 1000, 100).meta({
    description:
      "live events arriving within this window go to each stream in one write (0-1000; 0: same tick)",
  }),
  DUT_WEBHOOK_POLL_MS: int(10, 60_000, 250).meta({
    description: "how often the webhook worker reads the outbox (docs/notifications.md)",
  }),
  DUT_WEBHOOK_TIMEOUT_MS: int(100, 120_000, 10_000).meta({
    description: "time limit of one webhook call: connect, send and read the answer",
  }),
  DUT_WEBHOOK_MAX_RESPONSE_BYTES: int(1024, 16 * 1024 * 1024, 65_536).meta({
    description: "webhook answer bytes read at most (its first 1 KiB is kept in the delivery log)",
  }),
  DUT_WEBHOOK_RETRY_BASE_MS: int(1, 3_600_000, 5_000).meta({
    description: "first webhook retry delay; doubles per attempt, with jitter",
  }),
  DUT_WEBHOOK_RETRY_MAX_DELAY_SECONDS: int(1, 86_400, 3_600).meta({
    description: "longest delay between two attempts of a webhook delivery",
  }),
  DUT_WEBHOOK_RETRY_WINDOW_SECONDS: int(1, 7 * 86_400, 86_400).meta({
    description: "how long a webhook delivery is retried before it is given up (`failed`)",
  }),
  DUT_WEBHOOK_FAILING_AFTER: int(1, 1000, 5).meta({
    description: "failed attempts in a row after which a webhook subscription is marked failing",
  }),
  DUT_WEBHOOK_CONCURRENCY: int(1, 256, 16).meta({
    description: "webhook deliveries in flight at once per instance (one per subscription at a time)",
  }),
  ...netboxEnv(int),
  DUT_DEFAULT_LICENSE_ID: z.string().trim().min(1).default("LAB-INTERNAL").meta({
    description: "licence id of a run started without `licenseId`",
  }),
  DUT_LAB_NAME: z.string().trim().min(1, "must not be empty").max(200, "must be at most 200 characters")
    .default("dutlab test lab").meta({
      description:
        "the lab's name: issuer of every report (cover, licence text), recorded on each run at its start",
    }),
});

export type Env = z.infer<typeof EnvSchema>;

/**
 * The entry points and the secrets each one uses, hence requires with DATABASE_URL (docs/deploy-postgres.md "Which host holds which secret":
 * which host holds which secret). In embedded mode the data directory's `secrets.json` gives them instead.
 * - `serve`: the HTTP API (and its worker): the admin token, the credential key, the report signing key,
 *   and the PDF signing certificate (checked apart, it is a pair of variables or a PKCS#12 file).
 * - `poll`: the polling worker alone: only the credential key (it logs in to devices; it never
 *   authenticates a request nor signs a report).
 * - `admin`: the operator tools that build every service (`token`, `rotate-key`, `rotate-signing-key`).
 * - `database`: `migrate`, `prune`, `backup` and `restore` (restore asks for the credential key itself,
 *   naming the key id the archive needs).
 */
export const ENTRY_SECRETS = {
  serve: ["ADMIN_TOKEN", "DUT_CRED_ENC_KEY", "DUT_REPORT_SIGNING_KEY"],
  poll: ["DUT_CRED_ENC_KEY"],
  admin: ["ADMIN_TOKEN", "DUT_CRED_ENC_KEY", "DUT_REPORT_SIGNING_KEY"],
  database: [],
} as const satisfies Record<string, readonly (keyof Env)[]>;
export type Entry = keyof typeof ENTRY_SECRETS;
/** The secrets an entry point requires with DATABASE_URL, as present strings. */
export type SecretsOf<E extends Entry> = { [K in (typeof ENTRY_SECRETS)[E][number]]: string };
/**
 * The parsed environment of an entry point: with DATABASE_URL every secret it uses is present (its type says
 * so); without, the embedded data directory gives them.
 */
export type ParsedEnv<E extends Entry> =
  | (Env & { DATABASE_URL: string } & SecretsOf<E>)
  | (Env & { DATABASE_URL?: undefined });

/** Every variable that carries a secret `poll` never uses. */
type ServeOnlySecret =
  | "ADMIN_TOKEN"
  | "DUT_NETBOX_TOKEN"
  | "DUT_REPORT_SIGNING_KEY"
  | "DUT_PDF_SIGNING_CERT"
  | "DUT_PDF_SIGNING_KEY"
  | "DUT_PDF_SIGNING_P12"
  | "DUT_PDF_SIGNING_P12_PASSWORD";
const SERVE_ONLY_SECRETS: readonly ServeOnlySecret[] = [
  "ADMIN_TOKEN",
  "DUT_NETBOX_TOKEN",
  "DUT_REPORT_SIGNING_KEY",
  "DUT_PDF_SIGNING_CERT",
  "DUT_PDF_SIGNING_KEY",
  "DUT_PDF_SIGNING_P12",
  "DUT_PDF_SIGNING_P12_PASSWORD",
];

/**
 * The configuration of a poller (`deno task poll`): the settings and the credential key, and by its type
 * no admin token, report signing key or PDF signing material (`pollConfig` drops them even when the
 * environment gives them).
 */
export type PollConfig = Omit<Env, ServeOnlySecret> & {
  DUT_CRED_ENC_KEY: string;
  /** PEM text of `DUT_TLS_CA_FILE`, when set. */
  extraCa: string[];
};

/** A poller's configuration from the parsed environment and its credential key, without any other secret. */
export function pollConfig(parsed: Env, credKey: string, extraCa: string[]): PollConfig {
  const c: Record<string, unknown> = { ...parsed, DUT_CRED_ENC_KEY: credKey, extraCa };
  for (const k of SERVE_ONLY_SECRETS) delete c[k];
  return c as PollConfig;
}

/** The validated configuration of `serve` and the admin tools, with every secret resolved. */
export interface Config extends Env {
  ADMIN_TOKEN: string;
  DUT_CRED_ENC_KEY: string;
  /** Ed25519 private key signing reports (base64 PKCS#8 DER or PEM). */
  DUT_REPORT_SIGNING_KEY: string;
  /**
   * The certificate and key signing report PDFs (`serve` only; null in the tools): from the
   * `DUT_PDF_SIGNING_*` variables, or generated in embedded mode.
   */
  pdfSigning: PdfSigningMaterial | null;
  /** PEM text of `DUT_TLS_CA_FILE`, when set. */
  extraCa: string[];
}

/**
 * Parse the environment; throws a StartupError listing one line per problem. Never echoes values.
 * With DATABASE_URL, `entry` decides which secrets are required: exactly those it uses (`ENTRY_SECRETS`;
 * the default, `admin`, is every key but the PDF certificate). `serve` also requires the PDF signing
 * certificate. A secret an entry does not use is still validated when given, never required.
 */
export function parseEnv<E extends Entry = "admin">(
  env: Record<string, string | undefined>,
  opts: { entry?: E } = {},
): ParsedEnv<E> {
  const entry: Entry = opts.entry ?? "admin";
  const clean = Object.fromEntries(
    Object.keys(EnvSchema.shape).map((k) => [k, env[k] === "" ? undefined : env[k]]),
  );
  const r = EnvSchema.safeParse(clean);
  if (!r.success) {
    const lines = r.error.issues.map((i) => `${String(i.path[0])}: ${i.message}`);
    throw new StartupError("BAD_CONFIG", lines.join("\n"));
  }
  const lines = pdfSigningProblems(r.data, entry === "serve" && !!r.data.DATABASE_URL);
  if (r.data.DUT_POLL_LEASE_SECONDS <= r.data.DUT_POLL_DEVICE_TIMEOUT_SECONDS) {
    lines.push(
      `DUT_POLL_LEASE_SECONDS: must be longer than DUT_POLL_DEVICE_TIMEOUT_SECONDS ` +
        `(${r.data.DUT_POLL_DEVICE_TIMEOUT_SECONDS} s): a lease shorter than a poll could expire while it runs`,
    );
  }
  if (r.data.DUT_NETBOX_WRITEBACK === "on") {
    for (const k of ["DUT_NETBOX_URL", "DUT_NETBOX_TOKEN"] as const) {
      if (!r.data[k]) lines.push(`${k}: required with DUT_NETBOX_WRITEBACK=on (docs/netbox.md)`);
    }
  }
  if (r.data.DATABASE_URL) {
    const missing = ENTRY_SECRETS[entry].filter((k) => !r.data[k]);
    lines.unshift(
      ...missing.map((k) =>
        `${k}: required by ${
          entry === "admin" ? "this command" : entry
        } when DATABASE_URL is set (a shared ` +
        `database needs the same secret on every instance that uses it); generate one with: ${
          k === "DUT_REPORT_SIGNING_KEY" ? GENERATE_SIGNING_KEY : GENERATE_SECRET
        }`
      ),
    );
  }
  if (lines.length) throw new StartupError("BAD_CONFIG", lines.join("\n"));
  // Checked above: with DATABASE_URL, every secret of ENTRY_SECRETS[entry] is present.
  return r.data as ParsedEnv<E>;
}

/** How the `DUT_PDF_SIGNING_*` variables combine: a certificate with its key, or a PKCS#12 file. */
function pdfSigningProblems(e: Env, required: boolean): string[] {
  const pem = e.DUT_PDF_SIGNING_CERT !== undefined || e.DUT_PDF_SIGNING_KEY !== undefined;
  if (pem && e.DUT_PDF_SIGNING_P12 !== undefined) {
    return [
      "DUT_PDF_SIGNING_P12: give either DUT_PDF_SIGNING_CERT with DUT_PDF_SIGNING_KEY, or DUT_PDF_SIGNING_P12",
    ];
  }
  if (pem && e.DUT_PDF_SIGNING_CERT === undefined) {
    return ["DUT_PDF_SIGNING_CERT: required with DUT_PDF_SIGNING_KEY (the certificate of that key)"];
  }
  if (pem && e.DUT_PDF_SIGNING_KEY === undefined) {
    return ["DUT_PDF_SIGNING_KEY: required with DUT_PDF_SIGNING_CERT (the certificate's private key)"];
  }
  if (required && !pem && e.DUT_PDF_SIGNING_P12 === undefined) {
    return [
      "DUT_PDF_SIGNING_CERT: required when DATABASE_URL is set (serve signs every report.pdf with the lab's " +
      `X.509 certificate, ECDSA P-256 or RSA 3072); make one with: ${MAKE_PDF_CERTIFICATE}`,
    ];
  }
  return [];
}

/** The PDF signing material the environment gives, or null. */
export function pdfSigningFromEnv(e: Env): PdfSigningMaterial | null {
  if (e.DUT_PDF_SIGNING_CERT && e.DUT_PDF_SIGNING_KEY) {
    return { kind: "pem", certificate: e.DUT_PDF_SIGNING_CERT, privateKey: e.DUT_PDF_SIGNING_KEY };
  }
  if (e.DUT_PDF_SIGNING_P12) {
    return {
      kind: "pkcs12",
      pkcs12: fromBase64(e.DUT_PDF_SIGNING_P12.replace(/\s+/g, "")),
      password: e.DUT_PDF_SIGNING_P12_PASSWORD ?? "",
    };
  }
  return null;
}
