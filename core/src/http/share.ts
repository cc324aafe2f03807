import { timingSafeEqual } from "../devices/credentials.ts";
import { base64url } from "../util/encoding.ts";

const enc = new TextEncoder();

async function hmac(secret: string, data: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    await crypto.subtle.digest("SHA-256", enc.encode(`dutlab share links v1\0${secret}`)),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  return base64url(new Uint8Array(await crypto.subtle.sign("HMAC", key, enc.encode(data))));
}

export const reportPath = (executionId: string) => `/runs/${executionId}/report`;

/**
 * A signed link to the print page, valid for `ttlSeconds`: `<origin>/runs/<id>/report?exp=<unix s>&sig=<s>`
 * with `sig` = base64url(HMAC-SHA256(key, "<path>\n<exp>")) and key = SHA-256("dutlab share links v1\0" +
 * ADMIN_TOKEN). Changing the path, `exp` or `sig` breaks it; rotating ADMIN_TOKEN revokes every link.
 *
 * @example
 * ```ts
 * const executionId = crypto.randomUUID();
 * const { url, expiresAt } = await shareLink("<ADMIN_TOKEN>", "https://dutlab.example", executionId, 86400);
 * console.log(`${url} (valid until ${expiresAt})`);
 * ```
 */
export async function shareLink(secret: string, origin: string, executionId: string, ttlSeconds: number) {
  const exp = Math.floor(Date.now() / 1000) + ttlSeconds;
  const path = reportPath(executionId);
  const sig = await hmac(secret, `${path}\n${exp}`);
  return { url: `${origin}${path}?exp=${exp}&sig=${sig}`, expiresAt: new Date(exp * 1000).toISOString() };
}

/** Whether `exp`/`sig` are a valid, unexpired signature for `path`. */
export async function checkShareLink(
  secret: string,
  path: string,
  exp: string,
  sig: string,
): Promise<boolean> {
  if (!/^\d{1,12}$/.test(exp)) return false;
  if (Number(exp) * 1000 < Date.now()) return false;
  return timingSafeEqual(await hmac(secret, `${path}\n${exp}`), sig);
}
