/**
 * A simulated NX-API REST (DME) switch on loopback HTTPS for tests and the `lab` task. It answers the
 * real paths with the real envelope, token cookie and error bodies, enforces login, token expiry and a
 * session cap, and serves its managed objects from a mutable `state`.
 *
 * @module
 */
import { type LabControls, type SimulatedDevice, type Simulator, startSimulator } from "@dutlab/core/testing";

/** An NTP provider (`datetimeNtpProvider`). */
export interface SimNtpProvider {
  /** Server or peer address (the `name` attribute, rn `prov-[<name>]`). */
  name: string;
  /** VRF the provider is reached through. */
  vrf: string;
  /** `server` or `peer`. */
  provT: "server" | "peer";
  /** Whether the provider is preferred. */
  preferred: boolean;
}

/** A physical interface (`l1PhysIf`, with its operational `ethpmPhysIf`). */
export interface SimInterface {
  /** e.g. `eth1/1` */
  id: string;
  /** Administrative state. */
  adminSt: "up" | "down";
  /** Operational state. */
  operSt: "up" | "down";
  /** Description. */
  descr: string;
  /** Switchport mode. */
  mode: "access" | "trunk";
  /** MTU, bytes. */
  mtu: number;
  /** Operational speed (e.g. `100G`, `auto`). */
  operSpeed: string;
}

/** A vPC domain (`vpcDom` with its `vpcKeepalive` and `vpcInst`). */
export interface SimVpc {
  /** vPC domain id. */
  domainId: number;
  /** Peer status, as the vPC domain reports it. */
  peerSt: string;
  /** This switch's operational role (e.g. `primary`). */
  operRole: string;
  /** Peer-keepalive destination address. */
  keepaliveDest: string;
  /** Peer-keepalive source address. */
  keepaliveSrc: string;
  /** Peer-link port-channel (e.g. `po1`). */
  peerLink: string;
}

/** What the simulated switch reports; tests change it between polls. */
export interface SwitchState {
  /** Host name. */
  hostname: string;
  /** Chassis serial number. */
  serial: string;
  /** `eqptCh.model` of `sys/ch`. */
  chassisModel: string;
  /** NX-OS version. */
  nxosVersion: string;
  /** NX-OS image file name. */
  nxosImageFile: string;
  /** BIOS version. */
  biosVersion: string;
  /** System up time (`systemUpTime`, e.g. `12:03:41:17.000`). */
  systemUpTime: string;
  /** NTP administrative state. */
  ntpAdminSt: "enabled" | "disabled";
  /** Configured NTP providers. */
  ntpProviders: SimNtpProvider[];
  /** `procSysCpuSummary` percentages. */
  cpu: { idle: number; user: number; kernel: number };
  /** `procSysMem`, in KB. */
  memory: { total: number; used: number; free: number };
  /** Physical interfaces. */
  interfaces: SimInterface[];
  /** Null when no vPC domain is configured. */
  vpc: SimVpc | null;
  /** Token lifetime reported by `aaaLogin` and enforced (NX-OS default 600). */
  refreshTimeoutSeconds: number;
  /** Concurrent sessions the switch accepts; further logins are refused. */
  sessionCap: number;
  /** False: the NX-API feature is off and every path answers 404. */
  nxapiEnabled: boolean;
  /** True: the user may log in but every data read is refused with 403. */
  readDenied: boolean;
}

/** The simulated switch handed to tests and the lab task. */
export interface VendorSim extends SimulatedDevice {
  /** Device state; change it between polls. */
  state: SwitchState;
  /** Concurrent sessions the switch accepts. */
  readonly sessionCap: number;
  /** `https://127.0.0.1:<port>` */
  readonly url: string;
  /** SHA-256 (hex) of the certificate being served. */
  readonly fingerprint: string;
  /** Most sessions that were open at once since start. */
  peakSessions(): number;
}

/** Options of {@link startSimulatedDevice}. */
export interface SwitchSimOptions {
  /** Port to listen on (default: a free one). */
  port?: number;
  /** Account user name the switch accepts. */
  username?: string;
  /** That account's password. */
  password?: string;
  /** Concurrent sessions accepted (default {@link DEFAULT_SESSION_CAP}). */
  sessionCap?: number;
  /** State to start with instead of {@link defaultState}'s (fields given replace the defaults). */
  state?: Partial<SwitchState>;
}

/**
 * Default session cap. NX-OS documents no fixed cap for NX-API REST tokens; its programmability guide
 * describes 4 nginx workers with a pool of 5 sessions each, so 20 is the closest documented figure.
 */
export const DEFAULT_SESSION_CAP = 20;

/** The device state a fresh simulator starts with. */
export function defaultState(): SwitchState {
  return {
    hostname: "lab-n9k-01",
    serial: "FDO21120U8N",
    chassisModel: "N9K-C93180YC-EX",
    nxosVersion: "10.3(4a)",
    nxosImageFile: "bootflash:///nxos64-cs.10.3.4a.M.bin",
    biosVersion: "05.47",
    systemUpTime: "12:03:41:17.000",
    ntpAdminSt: "enabled",
    ntpProviders: [
      { name: "10.10.0.11", vrf: "management", provT: "server", preferred: true },
      { name: "10.10.0.12", vrf: "management", provT: "server", preferred: false },
    ],
    cpu: { idle: 92.4, user: 4.6, kernel: 3 },
    memory: { total: 24500560, used: 8871764, free: 15628796 },
    interfaces: [
      {
        id: "eth1/1",
        adminSt: "up",
        operSt: "up",
        descr: "uplink-core-a",
        mode: "trunk",
        mtu: 9216,
        operSpeed: "100G",
      },
      {
        id: "eth1/2",
        adminSt: "up",
        operSt: "up",
        descr: "uplink-core-b",
        mode: "trunk",
        mtu: 9216,
        operSpeed: "100G",
      },
      {
        id: "eth1/3",
        adminSt: "up",
        operSt: "down",
        descr: "dut-port",
        mode: "access",
        mtu: 1500,
        operSpeed: "auto",
      },
      {
        id: "eth1/4",
        adminSt: "down",
        operSt: "down",
        descr: "",
        mode: "access",
        mtu: 1500,
        operSpeed: "auto",
      },
    ],
    vpc: {
      domainId: 10,
      peerSt: "peer-ok",
      operRole: "primary",
      keepaliveDest: "192.168.255.2",
      keepaliveSrc: "192.168.255.1",
      peerLink: "po1",
    },
    refreshTimeoutSeconds: 600,
    sessionCap: DEFAULT_SESSION_CAP,
    nxapiEnabled: true,
    readDenied: false,
  };
}

// ---------------------------------------------------------------------------------------------------
// Managed-object tree

interface Mo {
  cls: string;
  rn: string;
  attrs: Record<string, string>;
  children: Mo[];
}

const MOD_TS = "2024-05-02T09:14:27.512+00:00";
const mo = (cls: string, rn: string, attrs: Record<string, string>, children: Mo[] = []): Mo => ({
  cls,
  rn,
  attrs: { childAction: "", modTs: MOD_TS, status: "", ...attrs },
  children,
});

/** Classes the simulated DME knows, whether or not an instance exists right now. */
const KNOWN_CLASSES = new Set([
  "topSystem",
  "sysmgrShowVersion",
  "eqptCh",
  "datetimeClkPol",
  "datetimeNtpProvider",
  "procSystem",
  "procSysCpuSummary",
  "procSysMem",
  "interfaceEntity",
  "l1PhysIf",
  "ethpmPhysIf",
  "vpcEntity",
  "vpcInst",
  "vpcDom",
  "vpcKeepalive",
  "vpcPeerLink",
]);

function buildTree(s: SwitchState): Mo {
  const children: Mo[] = [
    mo("eqptCh", "ch", {
      descr: "Nexus9000 C93180YC-EX chassis",
      id: "1",
      model: s.chassisModel,
      operSt: "online",
      rev: "0",
      ser: s.serial,
      vendor: "Cisco Systems, Inc.",
    }),
    mo("sysmgrShowVersion", "showversion", {
      biosCompileTime: "05/17/2022",
      biosVersion: s.biosVersion,
      bootflashSize: "53298520",
      kernelUptime: "12 day(s), 3 hour(s), 41 minute(s), 17 second(s)",
      lastResetReason: "Unknown",
      lastResetService: "",
      lastResetSysVersion: "",
      lastResetTime: "",
      nxosCompileTime: "11/9/2023 12:00:00",
      nxosImageFile: s.nxosImageFile,
      nxosVersion: s.nxosVersion,
      plugin: "Core Plugin, Ethernet Plugin",
    }),
    mo(
      "datetimeClkPol",
      "time",
      {
        adminSt: s.ntpAdminSt,
        allowControl: "enabled",
        allowPrivate: "disabled",
        authSt: "disabled",
        logging: "disabled",
        loggingLevel: "critical",
        master: "disabled",
        masterStratum: "8",
        name: "default",
        passive: "disabled",
        rateLimit: "3",
      },
      s.ntpProviders.map((p) =>
        mo("datetimeNtpProvider", `prov-[${p.name}]`, {
          keyId: "0",
          maxPoll: "6",
          minPoll: "4",
          name: p.name,
          preferred: String(p.preferred),
          provT: p.provT,
          vrf: p.vrf,
        })
      ),
    ),
    mo("procSystem", "procsys", { name: "" }, [
      mo("procSysCpuSummary", "syscpusummary", {
        idle: s.cpu.idle.toFixed(2),
        kernel: s.cpu.kernel.toFixed(2),
        name: "",
        user: s.cpu.user.toFixed(2),
      }),
      mo("procSysMem", "sysmem", {
        free: String(s.memory.free),
        memstatus: "OK",
        name: "",
        total: String(s.memory.total),
        used: String(s.memory.used),
      }),
    ]),
    mo(
      "interfaceEntity",
      "intf",
      { descr: "" },
      s.interfaces.map((i) =>
        mo("l1PhysIf", `phys-[${i.id}]`, {
          accessVlan: "vlan-1",
          adminSt: i.adminSt,
          autoNeg: "on",
          descr: i.descr,
          duplex: "auto",
          id: i.id,
          layer: "Layer2",
          mode: i.mode,
          mtu: String(i.mtu),
          name: "",
          nativeVlan: "vlan-1",
          portT: "leaf",
          speed: "auto",
          trunkVlans: "1-4094",
          usage: "discovery",
        }, [
          mo("ethpmPhysIf", "phys", {
            operDuplex: i.operSt === "up" ? "full" : "auto",
            operMode: i.mode,
            operMtu: String(i.mtu),
            operSpeed: i.operSt === "up" ? i.operSpeed : "auto",
            operSt: i.operSt,
            operStQual: i.operSt === "up" ? "none" : i.adminSt === "down" ? "admin-down" : "link-failure",
          }),
        ])
      ),
    ),
  ];
  if (s.vpc) {
    const v = s.vpc;
    children.push(
      mo("vpcEntity", "vpc", { adminSt: "enabled" }, [
        mo("vpcInst", "inst", { adminSt: "enabled", ctrl: "" }, [
          mo("vpcDom", "dom", {
            adminSt: "enabled",
            autoRecovery: "disabled",
            compatSt: "pass",
            dualActiveSt: "false",
            id: String(v.domainId),
            operRole: v.operRole,
            peerGw: "disabled",
            peerSt: v.peerSt,
            peerStQual: "success",
            peerSwitch: "disabled",
            rolePrio: "32667",
            sysPrio: "32667",
          }, [
            mo("vpcKeepalive", "keepalive", {
              destIp: v.keepaliveDest,
              interval: "1000",
              srcIp: v.keepaliveSrc,
              timeout: "5",
              vrf: "management",
            }, [mo("vpcPeerLink", "peerlink", { adminSt: "enabled", id: v.peerLink })]),
          ]),
        ]),
      ]),
    );
  }
  return mo("topSystem", "sys", {
    address: "0.0.0.0",
    bootstrapState: "none",
    currentTime: new Date().toISOString(),
    id: "0",
    lcOwn: "local",
    mode: "unspecified",
    name: s.hostname,
    nameAlias: "",
    oobMgmtAddr: "0.0.0.0",
    role: "unsupported",
    serial: s.serial,
    state: "in-service",
    systemUpTime: s.systemUpTime,
  }, children);
}

/** Every object of the tree with its DN, depth first. */
function flatten(root: Mo): Array<{ dn: string; mo: Mo }> {
  const out: Array<{ dn: string; mo: Mo }> = [];
  const walk = (m: Mo, dn: string) => {
    out.push({ dn, mo: m });
    for (const c of m.children) walk(c, `${dn}/${c.rn}`);
  };
  walk(root, root.rn);
  return out;
}

interface RenderOpts {
  subtree: string;
  classes: Set<string> | null;
}

/** The DME's JSON for one object; the queried object carries `dn`, nested children carry `rn`. */
function render(m: Mo, naming: Record<string, string>, opts: RenderOpts): Record<string, unknown> {
  const body: Record<string, unknown> = { attributes: { ...m.attrs, ...naming } };
  if (opts.subtree === "children" || opts.subtree === "full") {
    const kids = m.children
      .filter((c) => opts.subtree === "full" || !opts.classes || opts.classes.has(c.cls))
      .map((c) =>
        opts.subtree === "full"
          ? render(c, { rn: c.rn }, opts)
          : { [c.cls]: { attributes: { ...c.attrs, rn: c.rn } } }
      );
    if (kids.length) body.children = kids;
  }
  return { [m.cls]: body };
}

// ---------------------------------------------------------------------------------------------------
// HTTP

const envelope = (imdata: unknown[]) => ({ totalCount: String(imdata.length), imdata });
/**
 * A JSON answer sent chunked, as the switch's nginx front end does. A fixed-length body over ~500 bytes
 * from the loopback TLS server stalls ~40 ms per answer (Nagle against delayed ACK); chunked does not.
 */
function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  const bytes = new TextEncoder().encode(JSON.stringify(body));
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(bytes);
      c.close();
    },
  });
  return new Response(stream, { status, headers: { "content-type": "application/json", ...headers } });
}
const dmeError = (status: number, code: string, text: string) =>
  json({ totalCount: "1", imdata: [{ error: { attributes: { code, text } } }] }, status);
const notFound = () =>
  new Response("<html><head><title>404 Not Found</title></head><body><h1>404 Not Found</h1></body></html>", {
    status: 404,
    headers: { "content-type": "text/html" },
  });

const TOKEN_INVALID = "Token was invalid (Error: Token timeout)";
const NO_COOKIE =
  "Need a valid webtoken cookie (named APIC-Cookie) or a signed request with signature in the cookie.";

interface Session {
  user: string;
  sessionId: string;
  createdAt: number;
  refreshedAt: number;
}

function randomB64(bytes: number): string {
  return btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(bytes))));
}

/** Cookie value by name; NX-OS matches `APIC-cookie` case-insensitively (clients send `Apic-Cookie` too). */
function cookie(req: Request, name: string): string | null {
  for (const part of (req.headers.get("cookie") ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim().toLowerCase() === name.toLowerCase()) {
      return part.slice(eq + 1).trim();
    }
  }
  return null;
}

/** Start a simulated NX-API REST switch. Default credentials: `admin` / `Nexus-Lab-2024`. */
export async function startSimulatedDevice(opts: SwitchSimOptions = {}): Promise<VendorSim> {
  const username = opts.username ?? "admin";
  const password = opts.password ?? "Nexus-Lab-2024";
  const state: SwitchState = {
    ...defaultState(),
    ...(opts.sessionCap !== undefined ? { sessionCap: opts.sessionCap } : {}),
    ...opts.state,
  };
  const sessions = new Map<string, Session>();
  let peak = 0;

  const purge = () => {
    const now = Date.now();
    for (const [token, s] of sessions) {
      if (now - s.refreshedAt >= state.refreshTimeoutSeconds * 1000) sessions.delete(token);
    }
  };

  const loginBody = (cls: "aaaLogin" | "aaaRefresh", token: string, s: Session) => ({
    totalCount: "1",
    imdata: [{
      [cls]: {
        attributes: {
          token,
          siteFingerprint: "",
          refreshTimeoutSeconds: String(state.refreshTimeoutSeconds),
          guiIdleTimeoutSeconds: "1200",
          restTimeoutSeconds: "0",
          creationTime: String(Math.floor(s.createdAt / 1000)),
          firstLoginTime: String(Math.floor(s.createdAt / 1000)),
          userName: s.user,
          remoteUser: "false",
          unixUserId: "0",
          sessionId: s.sessionId,
          lastName: "",
          firstName: "",
          version: state.nxosVersion,
          buildTime: "Thu Nov 09 12:00:00 UTC 2023",
        },
        children: [{
          aaaUserDomain: {
            attributes: { name: "all", rolesR: "admin", rolesW: "admin" },
            children: [
              { aaaReadRoles: { attributes: {} } },
              {
                aaaWriteRoles: {
                  attributes: {},
                  children: [{ role: { attributes: { name: "network-admin" } } }],
                },
              },
            ],
          },
        }],
      },
    }],
  });

  const issue = (cls: "aaaLogin" | "aaaRefresh", s: Session) => {
    const token = randomB64(96);
    sessions.set(token, s);
    peak = Math.max(peak, sessions.size);
    return json(loginBody(cls, token, s), 200, { "set-cookie": `APIC-cookie=${token}; path=/; HttpOnly` });
  };

  const handleLogin = (body: string) => {
    let name: unknown, pwd: unknown;
    try {
      const attrs = JSON.parse(body)?.aaaUser?.attributes;
      name = attrs?.name;
      pwd = attrs?.pwd;
    } catch {
      return dmeError(400, "400", "Failed to parse login request");
    }
    if (typeof name !== "string" || typeof pwd !== "string") {
      return dmeError(400, "400", "Failed to parse login request");
    }
    if (name !== username || pwd !== password) return dmeError(401, "401", "Authentication failure.");
    purge();
    if (sessions.size >= state.sessionCap) {
      return dmeError(503, "503", `Maximum number of NX-API sessions (${state.sessionCap}) reached`);
    }
    const now = Date.now();
    return issue("aaaLogin", { user: name, sessionId: randomB64(16), createdAt: now, refreshedAt: now });
  };

  const query = (url: URL, path: string): Response => {
    const tree = flatten(buildTree(state));
    const subtree = url.searchParams.get("rsp-subtree") ?? "no";
    const rspClasses = url.searchParams.get("rsp-subtree-class");
    const opts: RenderOpts = { subtree, classes: rspClasses ? new Set(rspClasses.split(",")) : null };
    const classPath = /^\/api\/(?:node\/)?class\/(.+)\.json$/.exec(path);
    const moPath = /^\/api\/(?:node\/)?mo\/(.+)\.json$/.exec(path);
    for (const c of [...(opts.classes ?? []), ...(classPath ? [classPath[1]!] : [])]) {
      if (!KNOWN_CLASSES.has(c)) return dmeError(400, "17", `Unknown class ${c}`);
    }
    if (classPath) {
      const hits = tree.filter((e) => e.mo.cls === classPath[1]);
      return json(envelope(hits.map((e) => render(e.mo, { dn: e.dn }, opts))));
    }
    if (moPath) {
      const dn = decodeURIComponent(moPath[1]!);
      const hit = tree.find((e) => e.dn === dn);
      if (!hit) return json(envelope([]));
      const target = url.searchParams.get("query-target") ?? "self";
      if (target === "self") return json(envelope([render(hit.mo, { dn }, opts)]));
      const wanted = url.searchParams.get("target-subtree-class")?.split(",");
      const below = tree.filter((e) =>
        e.dn.startsWith(`${dn}/`) &&
        (target === "subtree" || e.dn.slice(dn.length + 1) === e.mo.rn) &&
        (!wanted || wanted.includes(e.mo.cls))
      );
      return json(envelope(below.map((e) => render(e.mo, { dn: e.dn }, opts))));
    }
    return notFound();
  };

  const handler = (req: Request, body: string): Response => {
    if (!state.nxapiEnabled) return notFound();
    const url = new URL(req.url);
    const path = url.pathname;
    const op = /^\/api\/(?:mo\/)?(aaaLogin|aaaRefresh|aaaLogout)\.json$/.exec(path)?.[1];
    if (op === "aaaLogin") return req.method === "POST" ? handleLogin(body) : notFound();
    if (!path.startsWith("/api/")) return notFound();

    const token = cookie(req, "APIC-cookie");
    if (!token) return dmeError(403, "403", NO_COOKIE);
    purge();
    const session = sessions.get(token);
    if (!session) return dmeError(403, "403", TOKEN_INVALID);

    if (op === "aaaRefresh") {
      sessions.delete(token);
      return issue("aaaRefresh", { ...session, refreshedAt: Date.now() });
    }
    if (op === "aaaLogout") {
      if (req.method !== "POST") return notFound();
      sessions.delete(token);
      return json(envelope([]));
    }
    if (req.method !== "GET") return dmeError(400, "400", "This simulated switch is read-only");
    if (state.readDenied) return dmeError(403, "403", "Permission denied");
    return query(url, path);
  };

  const sim: Simulator = await startSimulator({ handler, name: state.hostname, port: opts.port });
  const close = () => sim.close();
  return {
    sim,
    state,
    credentials: { username, password },
    get sessionCap() {
      return state.sessionCap;
    },
    get url() {
      return sim.url;
    },
    get fingerprint() {
      return sim.fingerprint;
    },
    openSessions() {
      purge();
      return sessions.size;
    },
    expireSessions() {
      sessions.clear();
    },
    peakSessions: () => peak,
    close,
    [Symbol.asyncDispose]: close,
  };
}

/**
 * The lab's settings for this switch (`deno task lab set vendor-a-switch ...`): `ntp` (`off` removes the NTP
 * providers, `on` restores the ones the device started with).
 */
export function labControls(dev: VendorSim): LabControls {
  const ntp = [...dev.state.ntpProviders];
  return {
    settings: {
      ntp: {
        values: ["on", "off"],
        apply: (v) => void (dev.state.ntpProviders = v === "on" ? [...ntp] : []),
      },
    },
  };
}
