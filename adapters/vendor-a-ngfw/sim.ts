/**
 * A simulated firewall speaking the FDM-style REST API over HTTPS: OAuth2 password / refresh / revoke
 * grants on `/api/fdm/latest/fdm/token`, bearer tokens with lifetimes, a cap of concurrent sessions that
 * expires the oldest (shared with "web UI" logins), `{items, paging}` lists and `ErrorWrapper` errors.
 *
 * @example
 * ```ts
 * await using sim = await startSimulatedDevice();
 * sim.setDecrypt(true);
 * sim.state.ha.nodeState = "HA_STANDBY_NODE";
 * ```
 * @module
 */
import { type LabControls, type SimulatedDevice, type Simulator, startSimulator } from "@dutlab/core/testing";
import {
  accessRule,
  defaultAccessPolicy,
  defaultInterfaces,
  defaultSslPolicy,
  defaultSystemInfo,
  deploymentJob,
  ntpObject,
  pendingChange,
  sslRule,
  standaloneHaStatus,
} from "./_sim_data.ts";

/** A JSON object of the FDM API, as the simulator holds it. */
export type Json = Record<string, unknown>;

/** HA status fields as `GET /devices/default/operational/ha/status/default` returns them. */
export interface SimHaStatus extends Json {
  /** `nodeRole` (null when standalone). */
  nodeRole: string | null;
  /** This node's `nodeState` (e.g. `HA_STANDBY_NODE`). */
  nodeState: string;
  /** The peer's `peerNodeState`. */
  peerNodeState: string;
  /** `configStatus`. */
  configStatus: string;
  /** `haHealthStatus`. */
  haHealthStatus: string;
}

/** Everything the simulated device answers with; tests change it between polls. */
export interface NgfwSimState {
  /** Answer of `/operational/systeminfo/default`. */
  systemInfo: Json;
  /** Deployment jobs (`DeploymentStatus`), oldest first; the newest one's `state` is what checks read. */
  deployments: Json[];
  /** Pending changes (`BaseEntityDiff`); empty means nothing pending. */
  pendingChanges: Json[];
  /** `GET /devices/default/operational/ha/status/default`. */
  ha: SimHaStatus;
  /** The access policy; its `sslPolicy` reference (or null) turns SSL decryption on or off. */
  accessPolicy: Json;
  /** The access rules of the access policy. */
  accessRules: Json[];
  /** SSL policies with their rules (served without `rules` on the policy list). */
  sslPolicies: Array<{ policy: Json; rules: Json[] }>;
  /** Configured NTP server addresses. */
  ntpServers: string[];
  /** Whether NTP is on. */
  ntpEnabled: boolean;
  /** Interfaces (`/devices/default/interfaces`). */
  interfaces: Json[];
  /** Newest `avgUsage` of the CPU trending report, percent. */
  cpuPercent: number;
  /** Memory use, percent. */
  memoryPercent: number;
  /** Concurrent sessions (API tokens and web UI logins); the oldest is expired when a login exceeds it. */
  sessionCap: number;
  /** `expires_in` of access tokens, seconds (device default 1800). */
  tokenLifetimeSeconds: number;
  /** `refresh_expires_in` of refresh tokens, seconds (device default 2400). */
  refreshLifetimeSeconds: number;
  /** Largest `limit` a list call gets, whatever it asks for (to exercise paging). */
  maxPageLimit: number;
  /** Host (and port) the device names itself by in `paging` and `links` URLs; the request's when null. */
  advertisedHost: string | null;
  /** Paths (relative to `/api/fdm/latest`, no query) answered with this status and an `ErrorWrapper`. */
  failPaths: Record<string, number>;
}

interface SimSession {
  id: string;
  origin: "api" | "ui";
  createdAt: number;
  accessToken: string;
  accessExpiresAt: number;
  refreshToken: string;
  refreshExpiresAt: number;
  accessRevoked: boolean;
  refreshRevoked: boolean;
}

/** The simulated FDM device. */
export interface VendorSim extends SimulatedDevice {
  /** Device state; change it between polls. */
  state: NgfwSimState;
  /** Token endpoint activity, for tests. */
  readonly counters: { logins: number; refreshes: number; revokes: number; rejectedRequests: number };
  /** Open web-UI sessions as a browser login would (counts against the cap, may expire the oldest). */
  simulateUiLogins(n: number): void;
  /** Turn SSL decryption on (a DECRYPT_RE_SIGN rule, policy attached) or off (no decrypt rule, detached). */
  setDecrypt(on: boolean): void;
  /** Add a finished (or running) deployment job; a `DEPLOYED` job also clears the pending changes. */
  deploy(state?: string): void;
  /** Record an unsaved change, as editing an object in FDM would. */
  addPendingChange(entityType: string, entityName?: string | null): void;
}

const API_PREFIX = /^\/api\/fdm\/(?:latest|v\d+)(\/.*)$/;
const LAB_PASSWORD = "Lab-Fdm-Admin1!";

function b64url(s: string): string {
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** A JWT-shaped opaque token, like the device issues (the signature is random: only the device checks it). */
function jwt(claims: Json): string {
  const sig = crypto.getRandomValues(new Uint8Array(32));
  return `${b64url(JSON.stringify({ alg: "HS256" }))}.${b64url(JSON.stringify(claims))}.${
    b64url(String.fromCharCode(...sig))
  }`;
}

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
}

/** The device's `ErrorWrapper` body. */
function errorWrapper(status: number, description: string, code: string, key = "General"): Response {
  return json({ error: { severity: "ERROR", key, messages: [{ description, code, location: "" }] } }, status);
}

/** `TokenStatus` body of the token endpoint's refusals. */
function tokenStatus(status: number, message: string): Response {
  return json({ status_code: status, message }, status);
}

/** The device state a fresh simulator starts with. */
export function defaultState(now: number = Date.now()): NgfwSimState {
  const ssl = defaultSslPolicy();
  return {
    systemInfo: defaultSystemInfo(now),
    deployments: [deploymentJob("DEPLOYED", now - 2 * 3600_000)],
    pendingChanges: [],
    ha: standaloneHaStatus() as SimHaStatus,
    accessPolicy: defaultAccessPolicy(),
    accessRules: [
      accessRule("lab-throughput-permit", "PERMIT", 268435457),
      accessRule("lab-block-rest", "DENY", 268435458),
    ],
    sslPolicies: [{ policy: ssl, rules: [sslRule("do-not-decrypt-lab", "DO_NOT_DECRYPT", 268435460)] }],
    ntpServers: ["0.sourcefire.pool.ntp.org", "1.sourcefire.pool.ntp.org"],
    ntpEnabled: true,
    interfaces: defaultInterfaces(),
    cpuPercent: 12.5,
    memoryPercent: 41.2,
    sessionCap: 5,
    tokenLifetimeSeconds: 1800,
    refreshLifetimeSeconds: 2400,
    maxPageLimit: 1000,
    advertisedHost: null,
    failPaths: {},
  };
}

/**
 * Start the simulated firewall on loopback HTTPS (self-signed certificate).
 * Default credentials: `admin` / `Lab-Fdm-Admin1!`; session cap 5.
 */
export async function startSimulatedDevice(
  opts: { port?: number; username?: string; password?: string; sessionCap?: number } = {},
): Promise<VendorSim> {
  const credentials = { username: opts.username ?? "admin", password: opts.password ?? LAB_PASSWORD };
  const state = defaultState();
  if (opts.sessionCap !== undefined) state.sessionCap = opts.sessionCap;
  const sessions: SimSession[] = [];
  const counters = { logins: 0, refreshes: 0, revokes: 0, rejectedRequests: 0 };

  const isOpen = (s: SimSession, now = Date.now()) =>
    (!s.accessRevoked && s.accessExpiresAt > now) || (!s.refreshRevoked && s.refreshExpiresAt > now);

  const prune = () => {
    const now = Date.now();
    for (let i = sessions.length - 1; i >= 0; i--) if (!isOpen(sessions[i]!, now)) sessions.splice(i, 1);
  };

  const issue = (
    s: Omit<SimSession, "accessToken" | "refreshToken" | "accessExpiresAt" | "refreshExpiresAt">,
  ) => {
    const now = Date.now();
    const iat = Math.floor(now / 1000);
    const session: SimSession = {
      ...s,
      accessExpiresAt: now + state.tokenLifetimeSeconds * 1000,
      refreshExpiresAt: now + state.refreshLifetimeSeconds * 1000,
      accessToken: "",
      refreshToken: "",
    };
    const common = { iat, sub: credentials.username, nbf: iat, tokenVersion: "1", opaque: s.id };
    session.accessToken = jwt({
      ...common,
      jti: crypto.randomUUID(),
      exp: iat + state.tokenLifetimeSeconds,
      refreshTokenExpiresAt: (iat + state.refreshLifetimeSeconds) * 1000,
      tokenType: "JWT_Access",
    });
    session.refreshToken = jwt({
      ...common,
      jti: crypto.randomUUID(),
      exp: iat + state.refreshLifetimeSeconds,
      accessTokenExpiresAt: (iat + state.tokenLifetimeSeconds) * 1000,
      tokenType: "JWT_Refresh",
    });
    return session;
  };

  /** A new login: when the cap is reached the device expires the oldest session. */
  const openSession = (origin: "api" | "ui"): SimSession => {
    prune();
    while (sessions.length >= Math.max(1, state.sessionCap)) sessions.shift();
    const s = issue({
      id: crypto.randomUUID(),
      origin,
      createdAt: Date.now(),
      accessRevoked: false,
      refreshRevoked: false,
    });
    sessions.push(s);
    return s;
  };

  const tokenResponse = (s: SimSession) =>
    json({
      access_token: s.accessToken,
      expires_in: state.tokenLifetimeSeconds,
      token_type: "Bearer",
      refresh_token: s.refreshToken,
      refresh_expires_in: state.refreshLifetimeSeconds,
    });

  const byAccessToken = (token: unknown): SimSession | undefined => {
    const now = Date.now();
    return typeof token === "string"
      ? sessions.find((s) => s.accessToken === token && !s.accessRevoked && s.accessExpiresAt > now)
      : undefined;
  };

  const tokenEndpoint = (body: string): Response => {
    let p: Json;
    try {
      const v = JSON.parse(body) as unknown;
      if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error("not an object");
      p = v as Json;
    } catch {
      return tokenStatus(400, "Invalid request body");
    }
    switch (p.grant_type) {
      case "password": {
        if (p.username !== credentials.username || p.password !== credentials.password) {
          return tokenStatus(400, "Invalid credentials");
        }
        counters.logins++;
        return tokenResponse(openSession("api"));
      }
      case "refresh_token": {
        const now = Date.now();
        const i = sessions.findIndex((s) =>
          s.refreshToken === p.refresh_token && !s.refreshRevoked && s.refreshExpiresAt > now
        );
        if (i < 0) return tokenStatus(400, "Invalid refresh token");
        counters.refreshes++;
        const old = sessions[i]!; // findIndex found it
        // Refreshing renews the same session: the old token pair stops working.
        sessions[i] = issue({ ...old, accessRevoked: false, refreshRevoked: false });
        return tokenResponse(sessions[i]!);
      }
      case "revoke_token": {
        if (!byAccessToken(p.access_token)) return tokenStatus(401, "Invalid access token");
        const target = sessions.find((s) =>
          s.accessToken === p.token_to_revoke || s.refreshToken === p.token_to_revoke
        );
        if (!target) return tokenStatus(400, "Invalid token to revoke");
        if (target.accessToken === p.token_to_revoke) target.accessRevoked = true;
        else target.refreshRevoked = true;
        counters.revokes++;
        prune();
        return tokenStatus(200, "Token revoked");
      }
      default:
        return tokenStatus(400, `Unsupported grant_type in this simulator: ${String(p.grant_type)}`);
    }
  };

  const handler = (req: Request, body: string, _sim: Simulator): Response => {
    const url = new URL(req.url);
    const m = API_PREFIX.exec(url.pathname);
    if (!m) return errorWrapper(404, `No resource at ${url.pathname}`, "notFound");
    const rel = m[1]!; // API_PREFIX's group is not optional
    if (rel === "/fdm/token") {
      return req.method === "POST"
        ? tokenEndpoint(body)
        : errorWrapper(405, "Method not allowed", "methodNotAllowed");
    }
    const auth = /^Bearer (.+)$/i.exec(req.headers.get("authorization") ?? "");
    if (!auth || !byAccessToken(auth[1])) {
      counters.rejectedRequests++;
      return errorWrapper(401, "Access token invalid.", "invalidAccessToken");
    }
    const forced = state.failPaths[rel];
    if (forced !== undefined) {
      return errorWrapper(
        forced,
        `Simulated failure on ${rel}`,
        forced === 403 ? "forbidden" : "simulatedFailure",
      );
    }
    if (req.method !== "GET") return errorWrapper(405, "This simulator is read-only", "methodNotAllowed");
    const origin = `https://${state.advertisedHost ?? url.host}`;
    const self = (p: string) => `${origin}/api/fdm/latest${p}`;
    const withLinks = (o: Json, p: string): Json => ({ ...o, links: { self: self(p) } });
    const list = (items: Json[], itemPath: (o: Json) => string) => {
      const offset = Math.max(0, Number(url.searchParams.get("offset") ?? 0) || 0);
      const asked = Number(url.searchParams.get("limit") ?? 10) || 10;
      const limit = Math.max(1, Math.min(asked, state.maxPageLimit));
      const page = items.slice(offset, offset + limit).map((o) => withLinks(o, itemPath(o)));
      const at = (o: number) => `${self(rel)}?offset=${o}&limit=${limit}`;
      return json({
        items: page,
        paging: {
          prev: offset > 0 ? [at(Math.max(0, offset - limit))] : [],
          next: offset + limit < items.length ? [at(offset + limit)] : [],
          limit,
          offset,
          count: items.length,
          pages: Math.ceil(items.length / limit),
        },
      });
    };
    const byId = (base: string) => (o: Json) => `${base}/${String(o.id)}`;
    let sub: RegExpExecArray | null;

    if (rel === "/operational/systeminfo/default") {
      return json(withLinks({ ...state.systemInfo, currentTime: Date.now() }, rel));
    }
    if (rel === "/operational/deploy") {
      // `sort=-queuedTime`: newest job first (the order the adapter asks for); otherwise history order.
      const sort = url.searchParams.get("sort");
      const jobs = sort === "-queuedTime"
        ? [...state.deployments].sort((a, b) => Number(b.queuedTime) - Number(a.queuedTime))
        : state.deployments;
      return list(jobs, byId(rel));
    }
    if ((sub = /^\/operational\/deploy\/([^/]+)$/.exec(rel))) {
      const job = state.deployments.find((d) => d.id === sub![1]);
      return job ? json(withLinks(job, rel)) : errorWrapper(404, "Object not found", "objectNotFound");
    }
    if (rel === "/operational/pendingchanges") return list(state.pendingChanges, () => rel + "/");
    if (rel === "/policy/accesspolicies") return list([state.accessPolicy], byId(rel));
    if ((sub = /^\/policy\/accesspolicies\/([^/]+)\/accessrules$/.exec(rel))) {
      if (sub[1] !== state.accessPolicy.id) return errorWrapper(404, "Object not found", "objectNotFound");
      return list(state.accessRules, byId(rel));
    }
    if (rel === "/policy/sslpolicies") return list(state.sslPolicies.map((s) => s.policy), byId(rel));
    if ((sub = /^\/policy\/sslpolicies\/([^/]+)\/sslrules$/.exec(rel))) {
      const p = state.sslPolicies.find((s) => s.policy.id === sub![1]);
      return p ? list(p.rules, byId(rel)) : errorWrapper(404, "Object not found", "objectNotFound");
    }
    if (rel === "/devicesettings/default/ntp") {
      return list([ntpObject([...state.ntpServers], state.ntpEnabled)], byId(rel));
    }
    if (rel === "/devices/default/operational/ha/status/default") {
      return json(withLinks({ ...state.ha }, rel));
    }
    if (rel === "/devices/default/interfaces") return list(state.interfaces, byId(rel));
    if ((sub = /^\/monitor\/trendingreports\/(cpu|memory)$/.exec(rel))) {
      const duration = Math.max(60, Number(url.searchParams.get("time_duration") ?? 3600) || 3600);
      const value = sub[1] === "cpu" ? state.cpuPercent : state.memoryPercent;
      const now = Math.floor(Date.now() / 60_000) * 60_000;
      const samples = Math.min(60, Math.floor(duration / 60));
      const items = Array.from({ length: samples }, (_, i) => ({
        timestamp: now - (samples - 1 - i) * 60_000,
        avgUsage: i === samples - 1 ? value : Math.max(0, Math.round((value + ((i * 7) % 5) - 2) * 10) / 10),
      }));
      return json(
        withLinks({
          id: sub[1],
          name: sub[1],
          title: `${sub[1]!.toUpperCase()} usage`,
          items,
          type: "trendingreport",
        }, rel),
      );
    }
    return errorWrapper(404, `No resource at ${rel}`, "notFound");
  };

  const sim = await startSimulator({ handler, name: "vendor-a-ngfw-sim", port: opts.port });

  const device: VendorSim = {
    sim,
    credentials,
    state,
    counters,
    openSessions() {
      prune();
      return sessions.length;
    },
    expireSessions() {
      const past = Date.now() - 1;
      for (const s of sessions) {
        s.accessExpiresAt = past;
        s.refreshExpiresAt = past;
      }
    },
    simulateUiLogins(n: number) {
      for (let i = 0; i < n; i++) openSession("ui");
    },
    setDecrypt(on: boolean) {
      if (state.sslPolicies.length === 0) state.sslPolicies.push({ policy: defaultSslPolicy(), rules: [] });
      const first = state.sslPolicies[0]!; // pushed just above when empty
      if (on) {
        if (!first.rules.some((r) => String(r.ruleAction).startsWith("DECRYPT_"))) {
          first.rules.unshift(sslRule("decrypt-lab-traffic", "DECRYPT_RE_SIGN", 268435461));
        }
        const p = first.policy;
        state.accessPolicy.sslPolicy = { id: p.id, type: p.type, version: p.version, name: p.name };
      } else {
        for (const s of state.sslPolicies) {
          s.rules = s.rules.filter((r) => !String(r.ruleAction).startsWith("DECRYPT_"));
        }
        state.accessPolicy.sslPolicy = null;
      }
    },
    deploy(jobState = "DEPLOYED") {
      state.deployments.push(deploymentJob(jobState, Date.now()));
      if (jobState === "DEPLOYED") state.pendingChanges = [];
    },
    addPendingChange(entityType: string, entityName: string | null = null) {
      state.pendingChanges.push(pendingChange(entityType, entityName));
    },
    close: () => sim.close(),
    [Symbol.asyncDispose]: () => sim.close(),
  };
  return device;
}

/** HA node states the lab's `ha` setting gives (FDM `nodeState`). */
const LAB_HA: Record<string, string> = {
  active: "HA_ACTIVE_NODE",
  standby: "HA_STANDBY_NODE",
  failed: "HA_FAILED_NODE",
};

/**
 * The lab's settings for this firewall (`deno task lab set vendor-a-ngfw ...`): `decrypt`, `deploy`
 * (`pending` records an unsaved access-rule change), `ha` and `ntp` (`on` restores the NTP servers the
 * device started with). The lab starts it decrypting.
 */
export function labControls(dev: VendorSim): LabControls {
  const ntp = [...dev.state.ntpServers];
  return {
    settings: {
      decrypt: { values: ["on", "off"], apply: (v) => dev.setDecrypt(v === "on") },
      deploy: {
        values: ["ok", "pending", "failed"],
        apply(v) {
          if (v === "pending") dev.addPendingChange("accessrule", "lab-throughput-permit");
          else dev.deploy(v === "ok" ? "DEPLOYED" : "DEPLOY_FAILED");
        },
      },
      ha: { values: Object.keys(LAB_HA), apply: (v) => void (dev.state.ha.nodeState = LAB_HA[v]!) },
      ntp: { values: ["on", "off"], apply: (v) => void (dev.state.ntpServers = v === "on" ? [...ntp] : []) },
    },
    start: () => dev.setDecrypt(true),
  };
}
