/**
 * Report signatures: an Ed25519 key of the service (Web Crypto) signs a DSSE envelope (secure-systems-lab
 * DSSE v1) whose payload is an in-toto Statement v1 naming the report as its subject. docs/reports.md "Signatures"
 * documents the exact bytes:
 *
 * - `reportSha256` = SHA-256 of the RFC 8785 canonical JSON of the report without `reportSha256` (the
 *   report's canonical bytes, unchanged by this module);
 * - the Statement's first subject is `report-<executionId>.canonical.json` with `digest.sha256` =
 *   `reportSha256`; the second is `report-<executionId>.json` with the SHA-256 of the exact frozen
 *   `report.json` bytes the service serves (and the PDF embeds), so `sha256sum report.json` matches too;
 * - the payload is the canonical (RFC 8785) JSON of the Statement, UTF-8;
 * - the signature is Ed25519 (RFC 8032, pure) over PAE = `"DSSEv1" SP LEN(payloadType) SP payloadType SP
 *   LEN(payload) SP payload`, LEN = ASCII decimal byte count, payloadType `application/vnd.in-toto+json`;
 * - `keyid` = lowercase hex SHA-256 of the DER SubjectPublicKeyInfo of the public key
 *   (`openssl pkey -pubin -in key.pem -outform DER | sha256sum`).
 *
 * So the signature covers the canonical report bytes through their digest in the signed Statement.
 * @module
 */
import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import { canonicalJson, jcsSha256, sha256Hex } from "../util/hash.ts";
import { NotFoundError } from "../errors.ts";
import { isUuid } from "../util/ids.ts";
import { base64, base64url, fromBase64, fromBase64url } from "../util/encoding.ts";
import { TEST_RESULT_PREDICATE_TYPE, testResultStatement } from "./attest.ts";
import type { ReportData } from "./types.ts";

/** DSSE payload type of an in-toto Statement. */
export const PAYLOAD_TYPE = "application/vnd.in-toto+json";
/** in-toto Statement v1 `_type`. */
export const STATEMENT_TYPE = "https://in-toto.io/Statement/v1";
/** The predicate type of a dutlab report statement (a URN: nothing to resolve). */
export const PREDICATE_TYPE = "urn:dutlab:predicate:test-report:v1";

/** PKCS#8 DER of an Ed25519 private key = this 16-byte prefix + the 32-byte seed (RFC 8410). */
const PKCS8_PREFIX = Uint8Array.from(
  "302e020100300506032b657004220420".match(/../g)!,
  (h) => parseInt(h, 16),
);

const enc = new TextEncoder();

/**
 * The PKCS#8 DER bytes of an Ed25519 private key given as base64 (of the DER) or as PEM
 * (`-----BEGIN PRIVATE KEY-----`); `null` when it is neither.
 */
export function parseSigningKey(text: string): Uint8Array<ArrayBuffer> | null {
  const body = text.replace(/-----(BEGIN|END) PRIVATE KEY-----/g, "").replace(/\s+/g, "");
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(body)) return null;
  let der: Uint8Array<ArrayBuffer>;
  try {
    // The key may be given in either alphabet (base64url has always been accepted).
    der = fromBase64(body.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    return null;
  }
  if (der.length !== 48 || PKCS8_PREFIX.some((b, i) => der[i] !== b)) return null;
  return der;
}

/** A new Ed25519 private key as base64 PKCS#8 DER (the form of `DUT_REPORT_SIGNING_KEY`). */
export async function generateSigningKey(): Promise<string> {
  const pair = await crypto.subtle.generateKey({ name: "Ed25519" }, true, [
    "sign",
    "verify",
  ]) as CryptoKeyPair;
  return base64(new Uint8Array(await crypto.subtle.exportKey("pkcs8", pair.privateKey)));
}

/** DSSE v1 pre-authentication encoding of a payload. */
export function pae(payloadType: string, payload: Uint8Array): Uint8Array<ArrayBuffer> {
  const type = enc.encode(payloadType);
  const head = enc.encode(`DSSEv1 ${type.length} ${payloadType} ${payload.length} `);
  const out = new Uint8Array(head.length + payload.length);
  out.set(head);
  out.set(payload, head.length);
  return out;
}

/** PEM text of DER bytes. */
function pem(label: string, der: Uint8Array): string {
  const lines = base64(der).match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}

/** A public signing key as the key list shows it. */
export interface PublicSigningKey {
  keyId: string;
  algorithm: "Ed25519";
  publicKeyPem: string;
  publicKeyJwk: { kty: "OKP"; crv: "Ed25519"; x: string; kid: string; alg: "EdDSA"; use: "sig" };
}

/** The public half of an Ed25519 key from its raw 32 bytes. */
export async function publicKeyOf(raw: Uint8Array<ArrayBuffer>): Promise<PublicSigningKey> {
  const spki = new Uint8Array(
    await crypto.subtle.exportKey(
      "spki",
      await crypto.subtle.importKey("raw", raw, { name: "Ed25519" }, true, ["verify"]),
    ),
  );
  const keyId = await sha256Hex(spki);
  return {
    keyId,
    algorithm: "Ed25519",
    publicKeyPem: pem("PUBLIC KEY", spki),
    publicKeyJwk: { kty: "OKP", crv: "Ed25519", x: base64url(raw), kid: keyId, alg: "EdDSA", use: "sig" },
  };
}

/** The service's signing key: signs PAE bytes, names itself by {@link PublicSigningKey.keyId}. */
export class ReportSigningKey {
  private constructor(private privateKey: CryptoKey, readonly publicKey: PublicSigningKey) {}

  get keyId(): string {
    return this.publicKey.keyId;
  }

  /** Import a key given as base64 PKCS#8 DER or PEM (see {@link parseSigningKey}). */
  static async fromText(text: string): Promise<ReportSigningKey> {
    const der = parseSigningKey(text);
    if (!der) throw new TypeError("not an Ed25519 private key (base64 PKCS#8 DER or PEM)");
    const privateKey = await crypto.subtle.importKey("pkcs8", der, { name: "Ed25519" }, true, ["sign"]);
    const jwk = await crypto.subtle.exportKey("jwk", privateKey);
    return new ReportSigningKey(privateKey, await publicKeyOf(fromBase64url(jwk.x!)));
  }

  async sign(bytes: Uint8Array<ArrayBuffer>): Promise<Uint8Array> {
    return new Uint8Array(await crypto.subtle.sign({ name: "Ed25519" }, this.privateKey, bytes));
  }
}

/** An in-toto Statement v1 about one report. */
export interface ReportStatement {
  _type: typeof STATEMENT_TYPE;
  subject: Array<{ name: string; digest: { sha256: string } }>;
  predicateType: typeof PREDICATE_TYPE;
  predicate: {
    executionId: string;
    reportSha256: string;
    reportJsonSha256: string;
    generatedAt: string;
    planIdentifier: string;
    outcome: string;
    licenseId: string;
    canonicalization: "RFC 8785 JCS of the report without its reportSha256 member";
  };
}

/** A DSSE envelope (JSON form). */
export interface DsseEnvelope {
  payload: string;
  payloadType: string;
  signatures: Array<{ keyid: string; sig: string }>;
}

/**
 * The Statement over a frozen report: `text` is the exact report.json bytes as stored. Refuses (throws)
 * when `reportSha256` does not match the report's content, so a broken report is never signed.
 */
export async function reportStatement(text: string): Promise<ReportStatement> {
  const report = JSON.parse(text);
  const { reportSha256, ...rest } = report;
  const canonical = await jcsSha256(rest);
  if (canonical !== reportSha256) {
    throw new Error(`report ${report?.meta?.executionId}: reportSha256 does not match its content`);
  }
  const id = String(report.meta.executionId);
  const fileSha = await sha256Hex(text);
  return {
    _type: STATEMENT_TYPE,
    subject: [
      { name: `report-${id}.canonical.json`, digest: { sha256: reportSha256 } },
      { name: `report-${id}.json`, digest: { sha256: fileSha } },
    ],
    predicateType: PREDICATE_TYPE,
    predicate: {
      executionId: id,
      reportSha256,
      reportJsonSha256: fileSha,
      generatedAt: String(report.generatedAt),
      planIdentifier: String(report.meta.planIdentifier),
      outcome: String(report.meta.outcome),
      licenseId: String(report.license?.id),
      canonicalization: "RFC 8785 JCS of the report without its reportSha256 member",
    },
  };
}

/** Sign a report: the DSSE envelope as JSON text (one line + newline), stored and served as is. */
export async function signReport(key: ReportSigningKey, text: string): Promise<string> {
  return await signStatement(key, await reportStatement(text));
}

/**
 * Sign the test-result Statement of a report (`text` = the exact report.json bytes): the same envelope form,
 * PAE and key as {@link signReport}.
 */
export async function signTestResult(key: ReportSigningKey, text: string): Promise<string> {
  const { subject } = await reportStatement(text);
  return await signStatement(key, testResultStatement(JSON.parse(text) as ReportData, subject));
}

/** A DSSE envelope (JSON text + newline) over the canonical JSON of an in-toto Statement. */
export async function signStatement(key: ReportSigningKey, statement: unknown): Promise<string> {
  const payload = enc.encode(canonicalJson(statement));
  const sig = await key.sign(pae(PAYLOAD_TYPE, payload));
  const envelope: DsseEnvelope = {
    payload: base64(payload),
    payloadType: PAYLOAD_TYPE,
    signatures: [{ keyid: key.keyId, sig: base64(sig) }],
  };
  return JSON.stringify(envelope) + "\n";
}

/** One signed envelope about a run, as `GET /api/test-runs/{executionId}/attestations` lists it. */
export interface RunAttestation {
  /** File name in the evidence bundle and the PDF: `report-<id>.dsse.json`, `report-<id>.test-result.dsse.json`. */
  name: string;
  predicateType: string;
  keyId: string;
  /** The envelope as JSON text, the same bytes on every fetch. */
  text: string;
}

/** A key as `GET /api/report-keys` lists it. */
export interface ListedKey extends PublicSigningKey {
  validFrom: string;
  validUntil: string | null;
  current: boolean;
}

/**
 * Signing keys and signatures in the database. `register()` (at start) records the current public key;
 * a key seen for the first time closes the validity of the keys before it (rotation).
 */
export class ReportSignatures {
  constructor(private db: Kysely<Database>, readonly key: ReportSigningKey) {}

  /** Record the current key (idempotent); a new key ends the validity period of the older ones. */
  async register(): Promise<void> {
    const k = this.key.publicKey;
    await this.db.transaction().execute(async (tx) => {
      await sql`lock table report_signing_keys in share row exclusive mode`.execute(tx);
      const inserted = await tx.insertInto("report_signing_keys").values({
        key_id: k.keyId,
        algorithm: "Ed25519",
        public_key_pem: k.publicKeyPem,
        public_key_x: k.publicKeyJwk.x,
      }).onConflict((oc) => oc.column("key_id").doNothing()).returning("key_id").execute();
      if (inserted.length) {
        await tx.updateTable("report_signing_keys").set({ valid_until: sql<Date>`now()` })
          .where("key_id", "!=", k.keyId).where("valid_until", "is", null).execute();
      }
    });
  }

  /** Every key the service has signed with, oldest first. */
  async keys(): Promise<ListedKey[]> {
    const rows = await this.db.selectFrom("report_signing_keys").selectAll().orderBy("valid_from")
      .orderBy("key_id").execute();
    return rows.map((r) => ({
      keyId: r.key_id,
      algorithm: "Ed25519" as const,
      publicKeyPem: r.public_key_pem,
      publicKeyJwk: {
        kty: "OKP",
        crv: "Ed25519",
        x: r.public_key_x,
        kid: r.key_id,
        alg: "EdDSA",
        use: "sig",
      },
      validFrom: new Date(r.valid_from).toISOString(),
      validUntil: r.valid_until ? new Date(r.valid_until).toISOString() : null,
      current: r.key_id === this.key.keyId,
    }));
  }

  /**
   * The envelope of a finished run's report: the first one stored, else a new one signed now with the
   * current key (a report frozen before signing existed is signed when first asked for). 404 for an
   * unknown or unfinished run.
   */
  envelope(executionId: string): Promise<{ text: string; keyId: string }> {
    return this.#firstOrSigned(executionId, {
      first: () =>
        this.db.selectFrom("report_signatures").select(["envelope_json", "key_id"])
          .where("execution_id", "=", executionId).orderBy("id").limit(1).executeTakeFirst(),
      sign: (reportJson) => signReport(this.key, reportJson),
      store: async (text) => {
        await this.db.insertInto("report_signatures")
          .values({ execution_id: executionId, key_id: this.key.keyId, envelope_json: text })
          .onConflict((oc) => oc.columns(["execution_id", "key_id"]).doNothing()).execute();
      },
    });
  }

  /**
   * The test-result attestation of a finished run: the first one stored, else signed now with the current
   * key and stored (append-only `run_attestations`). 404 for an unknown or unfinished run.
   */
  testResultEnvelope(executionId: string): Promise<{ text: string; keyId: string }> {
    return this.#firstOrSigned(executionId, {
      first: () =>
        this.db.selectFrom("run_attestations").select(["envelope_json", "key_id"])
          .where("execution_id", "=", executionId).where("predicate_type", "=", TEST_RESULT_PREDICATE_TYPE)
          .orderBy("id").limit(1).executeTakeFirst(),
      sign: (reportJson) => signTestResult(this.key, reportJson),
      store: async (text) => {
        await this.db.insertInto("run_attestations")
          .values({
            execution_id: executionId,
            predicate_type: TEST_RESULT_PREDICATE_TYPE,
            key_id: this.key.keyId,
            envelope_json: text,
          })
          .onConflict((oc) => oc.columns(["execution_id", "predicate_type", "key_id"]).doNothing()).execute();
      },
    });
  }

  /**
   * The one path of both envelopes: the first stored, else signed now from the frozen report and stored
   * (a concurrent signer may win the insert; the first stored row is what every caller gets).
   */
  async #firstOrSigned(executionId: string, envelope: {
    first: () => Promise<{ envelope_json: string; key_id: string } | undefined>;
    sign: (reportJson: string) => Promise<string>;
    store: (text: string) => Promise<void>;
  }): Promise<{ text: string; keyId: string }> {
    if (!isUuid(executionId)) throw new NotFoundError(`No test run with executionId "${executionId}"`);
    const found = await envelope.first();
    if (found) return { text: found.envelope_json, keyId: found.key_id };
    const run = await this.db.selectFrom("test_runs").select(["report_json"])
      .where("execution_id", "=", executionId).executeTakeFirst();
    if (!run) throw new NotFoundError(`No test run with executionId "${executionId}"`);
    if (!run.report_json) {
      throw new NotFoundError(`Run "${executionId}" has not finished; its report does not exist yet`);
    }
    await envelope.store(await envelope.sign(run.report_json));
    const stored = await envelope.first();
    return { text: stored!.envelope_json, keyId: stored!.key_id };
  }

  /**
   * Every signed envelope of a finished run, the report's first: its report Statement
   * (`urn:dutlab:predicate:test-report:v1`) and its test-result Statement. The evidence bundle takes them
   * from here. 404 for an unknown or unfinished run.
   */
  async attestations(executionId: string): Promise<RunAttestation[]> {
    const report = await this.envelope(executionId);
    const result = await this.testResultEnvelope(executionId);
    return [
      { name: `report-${executionId}.dsse.json`, predicateType: PREDICATE_TYPE, ...report },
      {
        name: `report-${executionId}.test-result.dsse.json`,
        predicateType: TEST_RESULT_PREDICATE_TYPE,
        ...result,
      },
    ];
  }
}
