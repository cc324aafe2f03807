/**
 * Named API tokens with roles, and the append-only audit log (issue 21, docs/security.md "Tokens, roles and the audit log").
 * A token is `dut_` + 32 random bytes (base64url); only its SHA-256 is stored, so the database never holds
 * a usable secret. The configured ADMIN_TOKEN stays the bootstrap admin (named `bootstrap-admin`).
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { type Kysely, sql } from "kysely";
import type { Database } from "../db/schema.ts";
import { ConflictError, NotFoundError } from "../errors.ts";
import { isUniqueViolation } from "../db/errors.ts";
import { isUuid } from "../util/ids.ts";
import { decodeCursor, encodeCursor } from "../util/paging.ts";
import { base64url } from "../util/encoding.ts";

/** The token roles, most privileged first. */
export const ROLES = ["admin", "operator", "viewer"] as const;
/** A token role: one of {@link ROLES}. */
export type Role = typeof ROLES[number];
/** Who a bearer token stands for: the token's name and role. */
export interface Principal {
  /** The token's name (`ADMIN_TOKEN` for the bootstrap admin). */
  name: string;
  /** The token's role. */
  role: Role;
}
export const BOOTSTRAP_ADMIN = "bootstrap-admin";

const RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2 };
export const roleAllows = (have: Role, need: Role) => RANK[have] >= RANK[need];

/**
 * Mutating routes an operator may call: snapshots, pre-flight, runs and their share links. Every other
 * mutating route (registering, changing or deleting a device, tokens) needs `admin`; a route added later is
 * admin-only until it is listed here.
 */
const OPERATOR_ROUTES = new Set([
  "POST /api/admin/dut/devices/:id/snapshot",
  "POST /api/admin/dut/devices/:id/test",
  "POST /api/test-runs/preflight",
  "POST /api/test-runs",
  "POST /api/test-runs/:executionId/finish",
  "POST /api/test-runs/:executionId/share",
  "POST /api/admin/reservations",
  "POST /api/admin/reservations/:id/renew",
  "POST /api/admin/reservations/:id/release",
]);
/**
 * POST routes that only read (a body too structured for a query string) and change nothing: any role may call
 * them. Like every POST they are still recorded in the audit log (audit.ts), as pre-flight is.
 */
export const READ_POSTS = new Set([
  "POST /api/test-runs/compare",
  "POST /api/test-runs/:executionId/replay",
]);
/**
 * The role that may start a gated run over a failed pre-flight (`override` of `POST /api/test-runs`,
 * docs/runs.md "Gating the start"). An operator may start runs, not skip their gate: CI tokens are operators.
 */
export const OVERRIDE_START_GATE_ROLE: Role = "admin";

/** Reads only an admin may make: who holds which token, who did what (prunes too), the backup of everything. */
const ADMIN_READS = [
  /^\/api\/admin\/tokens(\/|$)/,
  /^\/api\/admin\/audit$/,
  /^\/api\/admin\/backup$/,
  /^\/api\/admin\/dut\/snapshot-prunes$/,
  /^\/api\/admin\/webhooks(\/|$)/,
];

/** The least role a request needs, from its method and route template. */
export function requiredRole(method: string, route: string): Role {
  if (method === "GET" || method === "HEAD") {
    return ADMIN_READS.some((r) => r.test(route)) ? "admin" : "viewer";
  }
  if (READ_POSTS.has(`${method} ${route}`)) return "viewer";
  return OPERATOR_ROUTES.has(`${method} ${route}`) ? "operator" : "admin";
}

/**
 * The roles refused `method route` (route as a Hono template, `/api/x/:id`), in rank order: what the 403 of the
 * OpenAPI document is derived from (openapi_doc.ts), so that the document and `bearerAuth` share this table.
 */
export function refusedRoles(method: string, route: string): Role[] {
  const need = requiredRole(method.toUpperCase(), route);
  return ROLES.filter((r) => !roleAllows(r, need)).sort((a, b) => RANK[a] - RANK[b]);
}

const sha256 = (s: string) => createHash("sha256").update(s).digest();

/** Constant-time comparison of two secrets (of their SHA-256, so lengths leak nothing either). */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}

/** A token as listed: everything but its secret. */
export interface TokenView {
  /** Token id (UUID). */
  id: string;
  /** Token name, unique (also after a revocation). */
  name: string;
  /** The token's role. */
  role: Role;
  /** When it was created (ISO 8601). */
  createdAt: string;
  /** When it was revoked (ISO 8601), null while valid. */
  revokedAt: string | null;
}

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/** How long a resolved token is trusted before it is read again (a revocation elsewhere takes effect then). */
export const TOKEN_CACHE_MS = 5_000;

/** Named API tokens with roles, stored as SHA-256 of the secret; the `ADMIN_TOKEN` resolves as the bootstrap admin. Resolutions are cached for {@link TOKEN_CACHE_MS}. */
export class TokenStore {
  #cache = new Map<string, { principal: Principal | null; until: number }>();
  /** A store over `api_tokens`; `adminToken` is the bootstrap admin's secret (`ADMIN_TOKEN`). */
  constructor(private db: Kysely<Database>, private adminToken: string) {}

  /** Create a token; its secret is returned once, here, and never stored. */
  async create(name: string, role: Role): Promise<TokenView & { token: string }> {
    if (name === BOOTSTRAP_ADMIN) throw new ConflictError(`"${BOOTSTRAP_ADMIN}" names the ADMIN_TOKEN`);
    const bytes = crypto.getRandomValues(new Uint8Array(32));
    const token = "dut_" + base64url(bytes);
    const id = crypto.randomUUID();
    try {
      const row = await this.db.insertInto("api_tokens").values({
        id,
        name,
        role,
        token_sha256: sha256(token).toString("hex"),
        revoked_at: null,
      }).returningAll().executeTakeFirstOrThrow();
      return { ...view(row), token };
    } catch (e) {
      if (isUniqueViolation(e)) {
        throw new ConflictError(`A token named "${name}" exists (names stay taken after a revocation)`, {
          cause: e,
          errors: [{ field: "name", message: "is already used" }],
        });
      }
      throw e;
    }
  }

  /** Every token (never its secret), oldest first, then by name; revoked ones included. */
  async list(): Promise<TokenView[]> {
    const rows = await this.db.selectFrom("api_tokens").selectAll().orderBy("created_at").orderBy("name")
      .execute();
    return rows.map(view);
  }

  /** Revoke by id or name; 404 when unknown. Revoking twice keeps the first time. */
  async revoke(idOrName: string): Promise<TokenView> {
    const row = await this.db.updateTable("api_tokens")
      .set({ revoked_at: sql`coalesce(revoked_at, now())` as never })
      .where((eb) => isUuid(idOrName) ? eb("id", "=", idOrName) : eb("name", "=", idOrName))
      .returningAll().executeTakeFirst();
    if (!row) throw new NotFoundError(`No token "${idOrName}"`);
    this.#cache.clear();
    return view(row);
  }

  /** The principal a bearer token names, or null. The ADMIN_TOKEN is compared in constant time. */
  async resolve(token: string): Promise<Principal | null> {
    if (sameSecret(token, this.adminToken)) return { name: BOOTSTRAP_ADMIN, role: "admin" };
    if (!token.startsWith("dut_") || token.length > 200) return null;
    const hash = sha256(token).toString("hex");
    const now = Date.now();
    const hit = this.#cache.get(hash);
    if (hit && hit.until > now) return hit.principal;
    const row = await this.db.selectFrom("api_tokens").select(["name", "role"])
      .where("token_sha256", "=", hash).where("revoked_at", "is", null).executeTakeFirst();
    const principal = row ? { name: row.name, role: row.role as Role } : null;
    if (this.#cache.size > 10_000) this.#cache.clear();
    this.#cache.set(hash, { principal, until: now + TOKEN_CACHE_MS });
    return principal;
  }
}

function view(r: {
  id: string;
  name: string;
  role: string;
  created_at: Date | string;
  revoked_at: Date | string | null;
}): TokenView {
  return {
    id: r.id,
    name: r.name,
    role: r.role as Role,
    createdAt: iso(r.created_at)!,
    revokedAt: iso(r.revoked_at),
  };
}

export interface AuditEntry {
  id: string;
  at: string;
  tokenName: string | null;
  role: Role | null;
  method: string;
  route: string;
  targetId: string | null;
  status: number;
  outcome: "success" | "refused" | "failed";
  requestId: string;
  /** A note the route added (e.g. a start-gate override and its reason), never a body; null otherwise. */
  detail: string | null;
}

export interface AuditFilter {
  tokenName?: string;
  method?: string;
  route?: string;
  targetId?: string;
  outcome?: AuditEntry["outcome"];
  from?: Date;
  to?: Date;
  limit?: number;
  cursor?: string;
}

/** The append-only audit log. */
export class AuditLog {
  constructor(private db: Kysely<Database>) {}

  async record(e: Omit<AuditEntry, "id" | "at">): Promise<void> {
    await this.db.insertInto("audit_log").values({
      token_name: e.tokenName,
      role: e.role,
      method: e.method,
      route: e.route,
      target_id: e.targetId,
      status: e.status,
      outcome: e.outcome,
      request_id: e.requestId,
      detail: e.detail,
    }).execute();
  }

  /** Newest first, filtered, one page; null for a cursor this API did not make. */
  async query(f: AuditFilter): Promise<{ entries: AuditEntry[]; nextCursor: string | null } | null> {
    const limit = f.limit ?? 100;
    let q = this.db.selectFrom("audit_log").selectAll().select(sql<string>`id::text`.as("id"));
    if (f.tokenName) q = q.where("token_name", "=", f.tokenName);
    if (f.method) q = q.where("method", "=", f.method);
    if (f.route) q = q.where("route", "=", f.route);
    if (f.targetId) q = q.where("target_id", "=", f.targetId);
    if (f.outcome) q = q.where("outcome", "=", f.outcome);
    if (f.from) q = q.where("at", ">=", f.from);
    if (f.to) q = q.where("at", "<", f.to);
    if (f.cursor !== undefined) {
      const before = decodeCursor("a", f.cursor);
      if (before === null || !/^\d{1,18}$/.test(before)) return null;
      q = q.where(sql`audit_log.id`, "<", sql`${before}::bigint`);
    }
    const rows = await q.orderBy("audit_log.id", "desc").limit(limit + 1).execute();
    const page = rows.slice(0, limit);
    const last = page.at(-1); // absent only when the limit is 0, then there is no next page
    return {
      entries: page.map((r) => ({
        id: r.id,
        at: iso(r.at)!,
        tokenName: r.token_name,
        role: r.role as Role | null,
        method: r.method,
        route: r.route,
        targetId: r.target_id,
        status: r.status,
        outcome: r.outcome as AuditEntry["outcome"],
        requestId: r.request_id,
        detail: r.detail ?? null,
      })),
      nextCursor: rows.length > limit && last ? encodeCursor("a", last.id) : null,
    };
  }
}
