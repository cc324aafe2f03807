import { type Kysely, sql } from "kysely";
import type { Database, DevicesTable } from "../db/schema.ts";
import type { AdapterDefinition, TlsVerifyMode } from "../adapter.ts";
import {
  CredentialError,
  type CredentialKey,
  decryptSecret,
  encryptSecret,
  passwordFingerprint,
} from "./credentials.ts";
import { type ConnectedDevice, openDeviceSession, releaseDeviceSession } from "./connect.ts";
import { DEFAULT_LIMITS, type TransportLimits } from "../transport/transport.ts";
import type { RegisteredAdapter, Registry } from "../registry.ts";
import type { SessionRegistry } from "./sessions.ts";
import { ConnectionPool } from "../transport/pool.ts";
import { sha256Hex } from "../util/hash.ts";
import { DeviceError, InvalidInputError, NotFoundError, type PollStatus } from "../errors.ts";
import { Batcher } from "../util/batcher.ts";
import { isUuid } from "../util/ids.ts";
import { decodeCursor, encodeCursor } from "../util/paging.ts";
import { hostnameConflict } from "./hostname_clashes.ts";
import { deleteUnreferencedPayloads, devicePayloadHashes } from "../db/payloads.ts";
import { normaliseBaseUrl, sameBaseUrl } from "./base_url.ts";
import { UNLISTED } from "../transport/networks.ts";

/** Filters and paging of the device list (docs/http-api.md "Reads, paging and filters"). */
export interface DeviceFilter {
  vendor?: string;
  role?: string;
  enabled?: boolean;
  /** A poll status, or `never` for devices never polled. */
  lastPollStatus?: PollStatus | "never";
  /** Case-insensitive substring of the hostname or the notes. */
  q?: string;
  /** Devices carrying every one of these tags (AND). */
  tag?: string[];
  limit?: number;
  cursor?: string;
}

export type { DeviceListRow, DeviceRow } from "./view.ts";

/** The columns of `DeviceListRow`: every column the API view shows, never `password_enc`. */
const VIEW_COLUMNS = [
  "id",
  "hostname",
  "vendor",
  "device_role",
  "base_url",
  "username",
  "tls_verify_mode",
  "poll_interval_seconds",
  "notes",
  "enabled",
  "last_poll_at",
  "last_poll_status",
  "last_poll_error",
  "pinned_cert_sha256",
  "tags",
  "created_at",
  "updated_at",
  "managed_by",
] as const satisfies ReadonlyArray<keyof DeviceListRow>;

export { type DeviceView, toView } from "./view.ts";
import type { DeviceListRow, DeviceRow } from "./view.ts";

/** Current key plus the previous one (during a rotation). */
export interface KeyRing {
  /** The key new credentials are encrypted with. */
  current: CredentialKey;
  /** Every key that decrypts, current first. */
  all: CredentialKey[];
}

/** Fingerprint of a stored credential (of the ciphertext, not the secret), to scope parked sessions. */
export function credentialKeyOf(row: DeviceRow): Promise<string> {
  return sha256Hex(`${row.username}\0${row.password_enc}`).then((h) => h.slice(0, 16));
}

/**
 * Registry of devices under test: CRUD with encrypted credentials, and the device session lifecycle
 * (`connect`, `releaseParked`, `releaseAllParked`): a session parked for a device is logged out when the
 * device is deleted or its credential or URL changes, here rather than in the routes.
 */
export class DeviceStore {
  /** Keep-alive connections of the devices between polls (dropped by `releaseAllParked`). */
  readonly connections = new ConnectionPool();

  constructor(
    private db: Kysely<Database>,
    private registry: Registry,
    private keys: KeyRing,
    private sessions: SessionRegistry,
    /** Transport limits of the logouts this store starts (the configured ones; the poll passes its own). */
    private limits: TransportLimits = DEFAULT_LIMITS,
  ) {}

  /** Every device in hostname order, with the columns of the API view only (no credential). */
  async list(): Promise<DeviceListRow[]> {
    return await this.db.selectFrom("devices").select(VIEW_COLUMNS).orderBy("hostname").execute();
  }

  /**
   * Devices in hostname order, filtered; with `limit`, one page after the hostname the `cursor` names
   * (keyset paging: a page never repeats or skips a device that existed when the first page was read).
   * Returns null for a cursor this API did not make.
   */
  async query(f: DeviceFilter): Promise<{ rows: DeviceListRow[]; nextCursor: string | null } | null> {
    this.#checkRole(f.role, "query.role");
    let q = this.db.selectFrom("devices").select(VIEW_COLUMNS);
    if (f.vendor) q = q.where("vendor", "=", f.vendor);
    if (f.role) q = q.where("device_role", "=", f.role);
    if (f.enabled !== undefined) q = q.where("enabled", "=", f.enabled);
    if (f.lastPollStatus === "never") q = q.where("last_poll_status", "is", null);
    else if (f.lastPollStatus) q = q.where("last_poll_status", "=", f.lastPollStatus);
    if (f.q) {
      const like = `%${f.q.replace(/[\\%_]/g, (m) => `\\${m}`)}%`;
      q = q.where((eb) => eb.or([eb("hostname", "ilike", like), eb("notes", "ilike", like)]));
    }
    // Every tag asked for (AND): `@>` is served by the GIN index devices_tags (migration 0012).
    if (f.tag?.length) q = q.where(sql<boolean>`tags @> ${textArray(f.tag)}`);
    if (f.cursor !== undefined) {
      const after = decodeCursor("d", f.cursor);
      if (after === null) return null;
      q = q.where("hostname", ">", after);
    }
    q = q.orderBy("hostname");
    if (f.limit === undefined) return { rows: await q.execute(), nextCursor: null };
    const rows = await q.limit(f.limit + 1).execute();
    const page = rows.slice(0, f.limit);
    const last = page.at(-1); // absent only when the limit is 0, then there is no next page
    return {
      rows: page,
      nextCursor: rows.length > f.limit && last ? encodeCursor("d", last.hostname) : null,
    };
  }

  /**
   * The device row, or a 404 problem. Rows asked for together (the polls a scan starts at once) are read
   * in one query.
   */
  async get(id: string): Promise<DeviceRow> {
    const row = isUuid(id) ? await this.#rows.run(id) : undefined;
    if (!row) throw new NotFoundError(`No device with id "${id}"`);
    return row;
  }

  #rows = new Batcher<string, DeviceRow | undefined>(async (ids) => {
    const rows = await this.db.selectFrom("devices").selectAll().where("id", "in", [...new Set(ids)])
      .execute();
    const byId = new Map(rows.map((r) => [r.id, r]));
    return ids.map((id) => byId.get(id));
  }, 256);

  adapterFor(vendor: string): { adapter: AdapterDefinition; name: string; version: string } | undefined {
    return this.registry.adapters.get(vendor);
  }

  #checkVendor(vendor: string) {
    const v = this.registry.vendors.find((x) => x.key === vendor);
    if (!v) {
      const message = `unknown vendor "${vendor}"; known: ${
        this.registry.vendors.map((x) => x.key).join(", ")
      }`;
      throw new InvalidInputError(`"vendor": ${message}`, { errors: [{ field: "vendor", message }] });
    }
    if (!v.available) {
      throw new InvalidInputError(`${vendor} has no adapter yet`, {
        errors: [{ field: "vendor", message: `${vendor} has no adapter yet` }],
        unprocessable: true,
      });
    }
  }

  /** Refuse a role no enabled adapter declares (`field`: where the request carried it). */
  #checkRole(role: string | undefined, field: string) {
    if (role === undefined || this.registry.deviceRoles.includes(role)) return;
    const message = `unknown role ${JSON.stringify(role)}; the enabled adapters' roles are: ${
      this.registry.deviceRoles.join(", ")
    }`;
    throw new InvalidInputError(`"${field}": ${message}`, { errors: [{ field, message }] });
  }

  /**
   * The stored form of a base URL for a device of `vendor` (devices/base_url.ts), or a 400 naming `baseUrl`:
   * a path only where the adapter declares `baseUrlPath`, a literal address only where DUT_DEVICE_NETWORKS
   * lets the service connect.
   */
  #baseUrl(vendor: string, input: string): string {
    const r = normaliseBaseUrl(input, {
      pathAllowed: this.registry.adapters.get(vendor)?.adapter.baseUrlPath === true,
      networks: this.limits.networks ?? UNLISTED,
    });
    if ("url" in r) return r.url;
    throw new InvalidInputError(`"baseUrl": ${r.error}`, {
      errors: [{ field: "baseUrl", message: r.error }],
    });
  }

  /** The allow-list of the connections this store's devices may open (`DUT_DEVICE_NETWORKS`). */
  get networks() {
    return this.limits.networks ?? UNLISTED;
  }

  async create(input: {
    hostname: string;
    vendor: string;
    deviceRole?: string;
    baseUrl: string;
    username: string;
    password: string;
    tlsVerifyMode: TlsVerifyMode;
    pollIntervalSeconds: number;
    notes?: string | null;
    enabled: boolean;
    tags?: string[];
  }): Promise<string> {
    this.#checkVendor(input.vendor);
    this.#checkRole(input.deviceRole, "deviceRole");
    const baseUrl = this.#baseUrl(input.vendor, input.baseUrl);
    const id = crypto.randomUUID();
    const role = input.deviceRole ?? this.registry.adapters.get(input.vendor)?.adapter.deviceRoles[0] ?? null;
    const password_enc = await encryptSecret(this.keys.current, id, input.password);
    const password_fp = await passwordFingerprint(this.keys.current, id, input.password);
    try {
      await this.db.insertInto("devices").values({
        id,
        hostname: input.hostname,
        vendor: input.vendor,
        device_role: role,
        base_url: baseUrl,
        username: input.username,
        password_enc,
        password_fp,
        tls_verify_mode: input.tlsVerifyMode,
        poll_interval_seconds: input.pollIntervalSeconds,
        notes: input.notes ?? null,
        enabled: input.enabled,
        last_poll_at: null,
        last_poll_status: null,
        last_poll_error: null,
        pinned_cert_sha256: null,
        tags: textArray(foldTags(input.tags ?? [])),
      }).execute();
    } catch (e) {
      throw await hostnameConflict(this.db, e, input.hostname);
    }
    return id;
  }

  async update(id: string, patch: {
    hostname?: string;
    deviceRole?: string;
    baseUrl?: string;
    username?: string;
    password?: string;
    tlsVerifyMode?: TlsVerifyMode;
    pollIntervalSeconds?: number;
    notes?: string | null;
    enabled?: boolean;
    tags?: string[];
    pinnedCertSha256?: null;
  }): Promise<DeviceRow> {
    this.#checkRole(patch.deviceRole, "deviceRole");
    const row = await this.get(id);
    const baseUrl = patch.baseUrl === undefined ? undefined : this.#baseUrl(row.vendor, patch.baseUrl);
    const set: Partial<Record<keyof DevicesTable, unknown>> = {};
    if (patch.hostname !== undefined) set.hostname = patch.hostname;
    if (patch.deviceRole !== undefined) set.device_role = patch.deviceRole;
    if (baseUrl !== undefined) set.base_url = baseUrl;
    if (patch.username !== undefined) set.username = patch.username;
    if (patch.password !== undefined) {
      set.password_enc = await encryptSecret(this.keys.current, id, patch.password);
      set.password_fp = await passwordFingerprint(this.keys.current, id, patch.password);
    }
    if (patch.tlsVerifyMode !== undefined) set.tls_verify_mode = patch.tlsVerifyMode;
    if (patch.pollIntervalSeconds !== undefined) set.poll_interval_seconds = patch.pollIntervalSeconds;
    if (patch.notes !== undefined) set.notes = patch.notes;
    if (patch.enabled !== undefined) set.enabled = patch.enabled;
    if (patch.tags !== undefined) set.tags = textArray(foldTags(patch.tags));
    const moved = (baseUrl !== undefined && !sameBaseUrl(row.base_url, baseUrl)) ||
      (patch.tlsVerifyMode !== undefined && patch.tlsVerifyMode !== row.tls_verify_mode);
    if (patch.pinnedCertSha256 === null || moved) set.pinned_cert_sha256 = null;
    let updated: DeviceRow;
    try {
      updated = await this.db.updateTable("devices")
        .set({ ...set, updated_at: sql<Date>`now()` } as never)
        .where("id", "=", id).returningAll().executeTakeFirstOrThrow();
    } catch (e) {
      throw await hostnameConflict(this.db, e, patch.hostname);
    }
    // A session parked under the old credential or at the old URL is of no use any more: log it out at the
    // old address (in the background: the answer does not wait for the device).
    if (
      updated.password_enc !== row.password_enc || updated.username !== row.username ||
      updated.base_url !== row.base_url
    ) {
      void this.releaseParked(row);
    }
    return updated;
  }

  /**
   * Delete a device; its snapshots go with it (cascade), then payloads no snapshot refers to. Its parked
   * session, if any, is logged out in the background.
   */
  async delete(id: string): Promise<void> {
    const row = await this.get(id);
    await this.db.transaction().execute(async (tx) => {
      const hashes = await devicePayloadHashes(tx, id);
      // Exactly one of concurrent deletes removes the row (the others wait on its row lock, then find
      // nothing): those answer 404, like a delete after the delete.
      const { numDeletedRows } = await tx.deleteFrom("devices").where("id", "=", id).executeTakeFirst();
      if (numDeletedRows === 0n) throw new NotFoundError(`No device with id "${id}"`);
      await deleteUnreferencedPayloads(tx, hashes);
    });
    void this.releaseParked(row);
  }

  /** Decrypt a device's secret for one cycle. */
  decryptPassword(row: DeviceRow): Promise<string> {
    return decryptSecret(this.keys.all, row.id, row.password_enc);
  }

  /**
   * Open an adapter session for a device over the core transport: the one path of poll cycles and
   * connection tests. The password is decrypted here and lives only in the adapter session.
   * Throws DeviceError (`adapter_error`, `credential_error`) before any I/O when it cannot start.
   * A `self-signed` device's first certificate is pinned by `onPin`: by default written at once (the
   * connection test); a poll keeps it and writes it with its results (`Outcome.pinnedCertSha256`).
   */
  async connect(
    row: DeviceRow,
    limits: TransportLimits,
    signal: AbortSignal,
    onPin: (sha256: string) => Promise<void> | void = (fp) => this.pin(row.id, fp),
  ): Promise<{ conn: ConnectedDevice; reg: RegisteredAdapter }> {
    const reg = this.registry.adapters.get(row.vendor);
    if (!reg) throw new DeviceError("adapter_error", `No adapter is enabled for vendor "${row.vendor}"`);
    const password = await this.decryptPassword(row).catch((e) => {
      throw e instanceof CredentialError ? new DeviceError("credential_error", e.message) : e;
    });
    const conn = await openDeviceSession({
      adapter: reg.adapter,
      device: deviceTarget(row),
      credentials: { username: row.username, password },
      credentialKey: await credentialKeyOf(row),
      sessions: this.sessions,
      limits,
      signal,
      onPin,
      pool: this.connections,
    });
    return { conn, reg };
  }

  /**
   * Record a trust-on-first-use pin unless one was set meanwhile. Pins recorded together (a first scan
   * of many new devices) go in one statement.
   */
  async pin(id: string, sha256: string): Promise<void> {
    await this.#pins.run({ id, sha256 });
  }

  #pins = new Batcher<{ id: string; sha256: string }, void>(async (pins) => {
    const values = pins.map((p) => sql`(${p.id}::uuid, ${p.sha256}::text)`);
    await sql`update devices set pinned_cert_sha256 = v.sha256
      from (values ${sql.join(values)}) as v(id, sha256)
      where devices.id = v.id and devices.pinned_cert_sha256 is null`.execute(this.db);
    return pins.map(() => undefined);
  }, 256);

  get sessionRegistry(): SessionRegistry {
    return this.sessions;
  }

  /**
   * Log out the session parked for a device (as it was: its URL, TLS settings and pin) and forget it.
   * Best effort, never throws (see `releaseDeviceSession`).
   */
  async releaseParked(row: DeviceRow): Promise<void> {
    await releaseDeviceSession({
      adapter: this.registry.adapters.get(row.vendor)?.adapter,
      device: deviceTarget(row),
      sessions: this.sessions,
      limits: this.limits,
    });
  }

  /** Log out every parked session and drop the kept connections (shutdown). */
  async releaseAllParked(): Promise<void> {
    this.connections.closeAll();
    const ids = this.sessions.deviceIds();
    if (!ids.length) return;
    const rows = await this.db.selectFrom("devices").selectAll().where("id", "in", ids).execute();
    await Promise.allSettled(rows.map((r) => this.releaseParked(r)));
  }
}

/** Device fields the connection layer needs. */
export function deviceTarget(row: DeviceRow) {
  return {
    id: row.id,
    hostname: row.hostname,
    vendor: row.vendor,
    deviceRole: row.device_role,
    baseUrl: row.base_url,
    username: row.username,
    tlsVerifyMode: row.tls_verify_mode as TlsVerifyMode,
    pinnedCertSha256: row.pinned_cert_sha256,
  };
}

/** Tags folded (each once) and sorted: the form stored and shown (docs/devices.md). */
export function foldTags(tags: readonly string[]): string[] {
  return [...new Set(tags)].sort();
}

/** A text[] parameter (the drivers bind a JS array; the cast names its type). */
const textArray = (values: readonly string[]) => sql<string[]>`cast(${[...values]} as text[])`;
