import assert from "node:assert/strict";
import type { AdapterDefinition, CollectedSnapshot } from "../src/adapter.ts";
import { readFacts } from "./facts.ts";
import { SessionRegistry } from "../mod.ts";
import { connectTo } from "./connect.ts";
import { type Simulator, startSimulator } from "./simulator.ts";

/**
 * A case folder's `replay.json`: explicit routes, plus optionally a tree of captured resources laid out as
 * the DMTF Redfish mockups are (`<dir>/<sub path>/index.json` answers `GET <prefix>/<sub path>`).
 */
export interface ReplayManifest {
  /** Explicit routes, each one captured answer (what the device said to one request); matched before the tree. */
  routes?: Array<{
    /** HTTP method; `GET` when omitted. */
    method?: string;
    /**
     * Path, optionally with a query. A route with a query answers a request whose query holds every one of
     * its parameters with the same value (more may be present); a route without a query answers any query.
     * When several routes match, the one with most query parameters wins.
     */
    path: string;
    /** HTTP status; 200 when omitted. */
    status?: number;
    /** Response headers to add. */
    headers?: Record<string, string>;
    /** JSON body. */
    body?: unknown;
    /** File (relative to the case folder) whose bytes are the body; `content-type` defaults to JSON. */
    file?: string;
  }>;
  /** Captured resources: `GET <prefix>/<sub path>` answers with `<dir>/<sub path>/index.json` (`dir` relative to the case folder). */
  tree?: { prefix: string; dir: string };
}

/** A running replay server: a {@link Simulator} answering with a case folder's captured answers. */
export interface ReplayServer extends AsyncDisposable {
  /** The simulator that serves the answers. */
  sim: Simulator;
  /** Base URL, `https://127.0.0.1:<port>`. */
  url: string;
  /** Requests no captured answer matched (they were answered 404). */
  unmatched: string[];
  /** Stop the simulator. */
  close(): Promise<void>;
}

/** One captured answer of a manifest's `routes`. */
type ReplayRoute = NonNullable<ReplayManifest["routes"]>[number];

const isFile = (p: string) => {
  try {
    return Deno.statSync(p).isFile;
  } catch {
    return false;
  }
};

function splitPath(p: string): { path: string; query: URLSearchParams } {
  const u = new URL(p, "https://replay.invalid");
  return { path: u.pathname, query: u.searchParams };
}

const trimSlash = (p: string) => (p.length > 1 ? p.replace(/\/+$/, "") : p);

/**
 * Serve a folder of captured device answers over the same loopback TLS as the simulators, recording every
 * request (`server.sim.requests`). Answers are static: a replay checks how an adapter reads real answers,
 * not how it authenticates.
 *
 * @example
 * ```ts
 * // In an adapter's test, beside its testdata/ (the example type-checks and is not run here):
 * async function example() {
 *   await using replay = await startReplayServer(new URL("./testdata/multi-vdom", import.meta.url));
 *   return replay.url;
 * }
 * ```
 */
export async function startReplayServer(folder: string | URL): Promise<ReplayServer> {
  const dir = folder instanceof URL ? folder.pathname : folder;
  const manifest = JSON.parse(await Deno.readTextFile(`${dir}/replay.json`)) as ReplayManifest;
  const routes = (manifest.routes ?? []).map((r) => ({ ...r, ...splitPath(r.path) }));
  const unmatched: string[] = [];
  const answer = async (r: ReplayRoute): Promise<Response> => {
    const headers = new Headers(r.headers ?? {});
    let body: BodyInit | null = null;
    if (r.file !== undefined) body = await Deno.readFile(`${dir}/${r.file}`);
    else if (r.body !== undefined) body = JSON.stringify(r.body);
    if (body !== null && !headers.has("content-type")) headers.set("content-type", "application/json");
    return new Response(body, { status: r.status ?? 200, headers });
  };
  const sim = await startSimulator({
    name: "replay",
    handler: async (req) => {
      const url = new URL(req.url);
      const path = trimSlash(url.pathname);
      let best: (typeof routes)[number] | null = null;
      let bestScore = -1;
      for (const r of routes) {
        if ((r.method ?? "GET").toUpperCase() !== req.method || trimSlash(r.path) !== path) continue;
        const keys = [...new Set(r.query.keys())];
        if (!keys.every((k) => url.searchParams.getAll(k).join("\0") === r.query.getAll(k).join("\0"))) {
          continue;
        }
        if (keys.length > bestScore) [best, bestScore] = [r, keys.length];
      }
      if (best) return await answer(best);
      const tree = manifest.tree;
      if (tree && req.method === "GET" && (path === trimSlash(tree.prefix) || path.startsWith(tree.prefix))) {
        const sub = path.slice(trimSlash(tree.prefix).length).replace(/^\/+/, "");
        const file = `${dir}/${tree.dir}/${sub ? sub + "/" : ""}index.json`;
        if (!sub.split("/").includes("..") && isFile(file)) {
          return new Response(await Deno.readFile(file), { headers: { "content-type": "application/json" } });
        }
      }
      unmatched.push(`${req.method} ${url.pathname}${url.search}`);
      return Response.json({ error: `no captured answer for ${req.method} ${url.pathname}${url.search}` }, {
        status: 404,
      });
    },
  });
  return {
    sim,
    url: sim.url,
    unmatched,
    close: () => sim.close(),
    [Symbol.asyncDispose]: () => sim.close(),
  };
}

/** What `expected.json` beside a case's `replay.json` says. */
export interface ExpectedCase {
  /** Facts compared deeply; a fact not named here is not compared (but it is still read). */
  facts: Record<string, unknown>;
  /** Anything else a vendor's own test compares (e.g. the poll's notes). */
  [more: string]: unknown;
}

/**
 * Poll a case folder's replay server once through the real adapter (connect, collect all, close), read
 * every declared fact and compare the ones `expected.json` names. Returns the poll for further assertions.
 */
export async function replayCase(
  adapter: AdapterDefinition,
  folder: string | URL,
  credentials: { username: string; password: string } = { username: "admin", password: "replay-Pass1" },
): Promise<{
  snaps: CollectedSnapshot[];
  facts: Record<string, unknown>;
  /** The session's `pollNotes()` after the poll. */
  notes: string[];
  expected: ExpectedCase;
  replay: ReplayServer;
}> {
  const dir = folder instanceof URL ? folder.pathname : folder;
  const expected = JSON.parse(await Deno.readTextFile(`${dir}/expected.json`)) as ExpectedCase;
  const replay = await startReplayServer(dir);
  try {
    let snaps: CollectedSnapshot[];
    let notes: string[];
    {
      await using conn = await connectTo(adapter, replay, { credentials, sessions: new SessionRegistry() });
      snaps = await conn.session.collectAll();
      notes = conn.session.pollNotes?.() ?? [];
    }
    assert.deepEqual(snaps.map((s) => s.label), [...adapter.labels]);
    const facts = readFacts(adapter, snaps);
    for (const [name, want] of Object.entries(expected.facts)) {
      assert.deepEqual(facts[name], want, `fact ${name} of case ${dir.split("/").pop()}`);
    }
    return { snaps, facts, notes, expected, replay };
  } finally {
    await replay.close();
  }
}
