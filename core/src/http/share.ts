import { z } from "@hono/zod-openapi";
import { timingSafeEqual } from "../devices/credentials.ts";
import { base64url } from "../util/encoding.ts";

/** A share link's `exp`: its expiry in Unix seconds. */
export const SHARE_EXP_PATTERN = /^\d{1,12}$/;
/** A share link's `sig`: base64url (unpadded) of an HMAC-SHA256, 43 characters. */
export const SHARE_SIG_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/**
 * The share-link query parameters as the document describes them (the routes read them as sent: a link
 * that does not match is a 403, not a 400, so that a broken link reads the same whatever part is wrong).
 */
export const ShareLinkQuery = z.object({
  exp: z.string().optional().openapi({
    description: "Share link expiry (Unix seconds), from `shareRunReport`",
    pattern: SHARE_EXP_PATTERN.source,
  }),
  sig: z.string().optional().openapi({
    description: "Share link signature (base64url HMAC-SHA256), from `shareRunReport`",
    pattern: SHARE_SIG_PATTERN.source,
  }),
});

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
  if (!SHARE_EXP_PATTERN.test(exp) || !SHARE_SIG_PATTERN.test(sig)) return false;
  if (Number(exp) * 1000 < Date.now()) return false;
  return timingSafeEqual(await hmac(secret, `${path}\n${exp}`), sig);
}
