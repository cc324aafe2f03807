import type { Db } from "../src/db/open.ts";
import { type Config, parseEnv } from "../src/runtime/config.ts";
import { buildRegistry, type LoadedModules } from "../src/registry.ts";
import { buildServices, type Services } from "../src/runtime/services.ts";
import { createApp } from "../src/http/app.ts";
import type { OpenAPIHono } from "@hono/zod-openapi";

/** The admin token and credential key used by test services. */
export const TEST_ADMIN_TOKEN = "test-admin-token-0123456789abcdef";
export const TEST_CRED_KEY = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
/** A fixed Ed25519 report signing key (base64 PKCS#8 DER; seed 0x01 × 32), for tests only. */
export const TEST_SIGNING_KEY = "MC4CAQAwBQYDK2VwBCIEIAEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEB";

/** Services and the HTTP app over a test database, with test secrets and the given modules. */
export async function testServices(
  db: Db,
  modules: LoadedModules,
  env: Record<string, string> = {},
): Promise<{ svc: Services; app: OpenAPIHono; config: Config; auth: Record<string, string> }> {
  const parsed = parseEnv({
    ADMIN_TOKEN: TEST_ADMIN_TOKEN,
    DUT_CRED_ENC_KEY: TEST_CRED_KEY,
    DUT_REPORT_SIGNING_KEY: TEST_SIGNING_KEY,
    DUT_DEVICE_REQUEST_TIMEOUT_MS: "5000",
    DUT_POLL_DEVICE_TIMEOUT_SECONDS: "10",
    ...env,
  });
  const config: Config = {
    ...parsed,
    ADMIN_TOKEN: parsed.ADMIN_TOKEN!,
    DUT_CRED_ENC_KEY: parsed.DUT_CRED_ENC_KEY!,
    DUT_REPORT_SIGNING_KEY: parsed.DUT_REPORT_SIGNING_KEY!,
    extraCa: [],
  };
  const svc = await buildServices(config, db, buildRegistry(modules));
  await svc.signatures.register();
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
