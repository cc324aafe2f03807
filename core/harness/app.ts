import type { Db } from "../src/db/open.ts";
import { type Config, parseEnv, pdfSigningFromEnv } from "../src/runtime/config.ts";
import { buildRegistry, type LoadedModules } from "../src/registry.ts";
import { buildServices, type Services } from "../src/runtime/services.ts";
import { createApp } from "../src/http/app.ts";
import { refusalLog } from "../src/http/auth.ts";
import { onTeardown } from "./db.ts";
import type { OpenAPIHono } from "@hono/zod-openapi";

/** The admin token and credential key used by test services. */
export const TEST_ADMIN_TOKEN = "test-admin-token-0123456789abcdef";
/** The credential encryption key of test services (`DUT_CRED_ENC_KEY`, 32 bytes as hex). */
export const TEST_CRED_KEY = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
/** A fixed Ed25519 report signing key (base64 PKCS#8 DER; seed 0x01 × 32), for tests only. */
export const TEST_SIGNING_KEY = "MC4CAQAwBQYDK2VwBCIEIAEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEB";

/**
 * A fixed self-signed ECDSA P-256 PDF signing certificate (`CN=dutlab test lab report signing`, valid until
 * 2046) and its key, for tests only (PEM, as `DUT_PDF_SIGNING_CERT` and `DUT_PDF_SIGNING_KEY` take them).
 */
export const TEST_PDF_CERT = `-----BEGIN CERTIFICATE-----
MIIB6jCCAZGgAwIBAgIUBgJlHpe4ZC6w0pTdMK+zaBVzMCAwCgYIKoZIzj0EAwIw
QzEnMCUGA1UEAwweZHV0bGFiIHRlc3QgbGFiIHJlcG9ydCBzaWduaW5nMRgwFgYD
VQQKDA9kdXRsYWIgdGVzdCBsYWIwHhcNMjYxMTI1MDIwNjI0WhcNNDYxMTIwMDIw
NjI0WjBDMScwJQYDVQQDDB5kdXRsYWIgdGVzdCBsYWIgcmVwb3J0IHNpZ25pbmcx
GDAWBgNVBAoMD2R1dGxhYiB0ZXN0IGxhYjBZMBMGByqGSM49AgEGCCqGSM49AwEH
A0IABDo9qm8OReSIRgn36gInhA8NHgDQtZhQ7J8f/GQW+WBmgKWOsfGQFGM5QYCh
3ixZhQqF00jOG1Vvror23cBBXiujYzBhMB0GA1UdDgQWBBQTcXVvNReUf5VGMvmR
HLYdtJ1nPjAfBgNVHSMEGDAWgBQTcXVvNReUf5VGMvmRHLYdtJ1nPjAPBgNVHRMB
Af8EBTADAQH/MA4GA1UdDwEB/wQEAwIGwDAKBggqhkjOPQQDAgNHADBEAiAMvj2V
BcBIGa4bEqG55NGH6wGTyPbOL7c7gdAZ0sDydwIgKRh0Zi2Yazw+5cK1SfEQQ9jq
JhSOTN/GR36MfN9di6g=
-----END CERTIFICATE-----
`;
/** The private key of {@link TEST_PDF_CERT} (PKCS#8 PEM). */
export const TEST_PDF_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgLoF8VLwOEilGXUD1
Ua18HZ0GBdW+pfX5mMp5HIAqRVGhRANCAAQ6PapvDkXkiEYJ9+oCJ4QPDR4A0LWY
UOyfH/xkFvlgZoCljrHxkBRjOUGAod4sWYUKhdNIzhtVb66K9t3AQV4r
-----END PRIVATE KEY-----
`;

/**
 * Services and the HTTP app over a test database, with test secrets and the given modules. `env` overrides
 * (an empty `DUT_PDF_SIGNING_CERT` and `DUT_PDF_SIGNING_KEY`: no PDF signer).
 */
export async function testServices(
  db: Db,
  modules: LoadedModules,
  env: Record<string, string> = {},
): Promise<{ svc: Services; app: OpenAPIHono; config: Config; auth: Record<string, string> }> {
  const parsed = parseEnv({
    ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    DUT_CRED_ENC_KEY: TEST_CRED_KEY,
    DUT_REPORT_SIGNING_KEY: TEST_SIGNING_KEY,
    DUT_PDF_SIGNING_CERT: TEST_PDF_CERT,
    DUT_PDF_SIGNING_KEY: TEST_PDF_KEY,
    DUT_DEVICE_REQUEST_TIMEOUT_MS: "5000",
    DUT_POLL_DEVICE_TIMEOUT_SECONDS: "10",
    ...env,
  });
  const config: Config = {
    ...parsed,
    ADMIN_TOKEN: parsed.ADMIN_TOKEN!,
    DUT_CRED_ENC_KEY: parsed.DUT_CRED_ENC_KEY!,
    DUT_REPORT_SIGNING_KEY: parsed.DUT_REPORT_SIGNING_KEY!,
    pdfSigning: pdfSigningFromEnv(parsed),
    extraCa: [],
  };
  const svc = await buildServices(config, db, buildRegistry(modules));
  onTeardown(db, async () => {
    await svc.close();
    await svc.pdf.close();
    refusalLog.flush();
  });
  await svc.signatures.register();
  await svc.pdfCertificates.register();
  return { svc, app: createApp(svc), config, auth: { authorization: `Bearer ${TEST_ADMIN_TOKEN}` } };
}

/** JSON request helper for `app.request`. */
export function jsonReq(method: string, body?: unknown, headers: Record<string, string> = {}): RequestInit {
  return {
    method,
    headers: { "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  };
}
