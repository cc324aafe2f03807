/**
 * Boundary check (`deno task boundaries`): an adapter, check or plugin may import `@dutlab/core`, its own
 * files and npm/node dependencies — never another adapter, check or plugin, nor an entry point.
 * Only tests and simulators may import `@dutlab/core/testing`. Core must import no module member.
 *
 * Inside core, a declared order of floors (`FLOORS` below, from the ground floor up): every product file
 * of `core/src` (not `*_test.ts`) may import only rooms on its own floor or below. A room is a folder of
 * `core/src` (subfolders belong to their top folder) or a top-level file; `adapter.ts`, `capability.ts` and
 * `check.ts` form one room, `contract`. An import that climbs to a higher floor fails, naming file and
 * import; a file in a room the order does not name fails too (place a new room on a floor first).
 * Rooms on one floor do not import each other unless the pair is declared in `SAME_FLOOR` (one direction;
 * none is needed today: where the code needs one room from another, e.g. lab/ reading the device store, the
 * reader stands a floor higher). `runtime/` (config, services, bootstrap) sits below `http/`: every route
 * is built over `Services` (17 files import runtime/services.ts); the entry face `core/runtime.ts`
 * (`@dutlab/core/runtime`) joins the runtime and `createApp`, outside the order. Folder-level cycles (from all product imports between rooms) fail
 * and are printed. `core/testing` (the test kit) and `*_test.ts` files stand outside the order.
 * There is no allow-list: a climb is fixed, not excused.
 *
 * The yard (where tests, benchmarks and tools stand): a test beside a room (`core/src/<room>/…_test.ts`) imports
 * its own room, rooms on lower floors, the in-process app (`runtime/`, `http/`), the kit (`core/testing`) and
 * the harness (`core/harness`), never a room of its own floor or a higher one. `tests/`, `bench/` and `tools/`
 * reach core only through its faces: the published ones (the export map of `core/deno.json`), the declared
 * operator face `core/ops.ts`, and per folder (`FACES`) the harness (`tests/`, `bench/`) or the verifier's face
 * `core/verify.ts` (`tools/`, with the harness's app and test database for the API client generator). A file-level import cycle inside any folder fails too.
 * No file under `tests/` names an adapter member (its vendor key, read from the workspace's adapters/).
 *
 * The command-line client (`cli/`) talks to the service over the HTTP API only: it imports no
 * `@dutlab/*` member and no file of `core/`, `adapters/`, `checks/` or `plugins/` (its types come from the
 * generated API client; `tools/verify_report.ts`, the self-contained verifier, is allowed).
 *
 * Exits 1 listing every violation.
 */
const root = Deno.env.get("BOUNDARY_ROOT")?.replace(/\/?$/, "/") ?? new URL("../", import.meta.url).pathname;
const IMPORT_RE =
  /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*["']([^"']+)["']|import\s*\(\s*["']([^"']+)["']\s*\)|^\s*import\s*["']([^"']+)["']/gm;

async function* tsFiles(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory && !e.name.startsWith(".")) yield* tsFiles(p);
    else if (e.isFile && /\.(ts|tsx)$/.test(e.name)) yield p;
  }
}

function specifiers(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(IMPORT_RE)) {
    // Each alternative of IMPORT_RE captures the specifier in its own group; exactly one matched.
    const spec = m[1] ?? m[2] ?? m[3];
    if (spec !== undefined) out.push(spec);
  }
  return out;
}

const violations: string[] = [];
const rel = (p: string) => p.slice(root.length);
const isTestOrSim = (f: string) => /(_test\.tsx?|\/sim\.ts|\/_testing\.ts|\/testing\/.*)$/.test(f);

for (const kind of ["adapters", "checks", "plugins"]) {
  for await (const member of Deno.readDir(`${root}${kind}`)) {
    if (!member.isDirectory) continue;
    const dir = `${root}${kind}/${member.name}`;
    for await (const file of tsFiles(dir)) {
      for (const spec of specifiers(await Deno.readTextFile(file))) {
        const where = `${rel(file)} imports "${spec}"`;
        if (spec.startsWith(".")) {
          const target = new URL(spec, `file://${file}`).pathname;
          if (!target.startsWith(dir + "/")) violations.push(`${where}: reaches outside its member folder`);
        } else if (spec === "@dutlab/core" || spec.startsWith("@dutlab/core/")) {
          if (spec.startsWith("@dutlab/core/testing") && !isTestOrSim(file)) {
            violations.push(`${where}: only tests and simulators may import @dutlab/core/testing`);
          } else if (spec === "@dutlab/core/runtime") {
            violations.push(`${where}: modules may not import the runtime wiring`);
          }
        } else if (spec.startsWith("@dutlab/")) {
          // A test may load another member to read its payloads through the real facts.
          if (!(/_test\.tsx?$/.test(file) && kind === "checks" && spec.startsWith("@dutlab/adapter-"))) {
            violations.push(`${where}: a module may not import another module`);
          }
        } else if (spec.startsWith("file:") || spec.startsWith("http")) {
          violations.push(`${where}: use the import map, not a URL`);
        }
      }
    }
  }
}

for await (const file of tsFiles(`${root}core`)) {
  for (const spec of specifiers(await Deno.readTextFile(file))) {
    if (
      /^@dutlab\/(adapter|check|plugin)-/.test(spec) ||
      /modules\.gen\.ts$|(^|\/)(server|poller)\.ts$/.test(spec)
    ) {
      violations.push(`${rel(file)} imports "${spec}": core knows no module and no entry point`);
    }
  }
}

/** The floors of core/src, from the ground floor up (docs/architecture.md shows the same table). */
const FLOORS: readonly (readonly string[])[] = [
  ["util", "errors", "plan", "version"], // helpers, domain errors, the test plan, the version
  ["db", "transport"], // the database, the device HTTP transport
  ["contract"], // adapter.ts, capability.ts, check.ts: the module contract
  ["access", "events", "api", "notify"], // tokens and audit, the event bus, the wire schemas, the webhook outbox
  ["registry"], // loaded modules
  ["devices", "snapshots"], // the device store and sessions, snapshots and diffs
  ["reservations"], // testbeds, reservations and their leases, the guard of reserved devices
  ["lab"], // the lab file and its plan
  ["preflight"], // the pre-flight engine
  ["poller"], // the poll cycle, store, worker
  ["report"], // results, rendering, seal, sign, evidence, replay
  ["runs"], // the run service
  ["formats", "netbox"], // CSV, JUnit, Markdown result formats; the NetBox client, mapping, import, journal
  ["backup"], // the backup archive
  ["runtime"], // config, data dir, services, bootstrap
  ["http"], // the Hono app and its routes
];
/** Same-floor imports the code needs: "from → to" (none today; declare one here with a reason). */
const SAME_FLOOR: ReadonlySet<string> = new Set<string>([]);

const floorOf = new Map(FLOORS.flatMap((rooms, i) => rooms.map((r) => [r, i] as const)));
const CONTRACT = new Set(["adapter", "capability", "check"]);
/** The room of a path in core/src (e.g. "runs" for core/src/runs/service.ts, "contract" for adapter.ts), or null outside. */
function roomOf(path: string): string | null {
  const src = `${root}core/src/`;
  if (!path.startsWith(src)) return null;
  const [top, ...rest] = path.slice(src.length).split("/") as [string, ...string[]];
  if (rest.length) return top;
  const name = top.replace(/\.tsx?$/, "");
  return CONTRACT.has(name) ? "contract" : name;
}

const roomEdges = new Map<string, Set<string>>();
const unplaced = new Set<string>();
const hasSrc = await Deno.stat(`${root}core/src`).then((s) => s.isDirectory, () => false);
for await (const file of hasSrc ? tsFiles(`${root}core/src`) : []) {
  if (/_test\.tsx?$/.test(file)) continue;
  const from = roomOf(file)!;
  if (!floorOf.has(from)) unplaced.add(from);
  for (const spec of specifiers(await Deno.readTextFile(file))) {
    if (!spec.startsWith(".")) continue;
    const to = roomOf(new URL(spec, `file://${file}`).pathname);
    if (to === null || to === from) continue;
    if (!floorOf.has(to)) unplaced.add(to);
    if (!roomEdges.has(from)) roomEdges.set(from, new Set());
    roomEdges.get(from)!.add(to);
    const [f, t] = [floorOf.get(from), floorOf.get(to)];
    if (f === undefined || t === undefined) continue;
    const where = `${rel(file)} imports "${spec}"`;
    if (t > f) {
      violations.push(`${where}: ${from} (floor ${f}) may not climb to ${to} (floor ${t})`);
    } else if (t === f && !SAME_FLOOR.has(`${from} → ${to}`)) {
      violations.push(`${where}: ${from} and ${to} share floor ${f} and the pair is not declared`);
    }
  }
}
for (const room of unplaced) violations.push(`core/src room "${room}" is on no floor: add it to FLOORS`);
for (const cycle of roomCycles(roomEdges)) violations.push(`folder cycle: ${cycle.join(" → ")}`);

/** Every elementary cycle's representative: one cycle per strongly connected component of more than one room. */
function roomCycles(edges: Map<string, Set<string>>): string[][] {
  const out: string[][] = [];
  const done = new Set<string>();
  for (const start of [...edges.keys()].sort()) {
    if (done.has(start)) continue;
    // Depth-first search from `start`, reporting the first path that returns to a room on the stack.
    const stack: string[] = [];
    const onStack = new Set<string>();
    const visit = (n: string): string[] | null => {
      stack.push(n);
      onStack.add(n);
      for (const m of [...(edges.get(n) ?? [])].sort()) {
        if (onStack.has(m)) return [...stack.slice(stack.indexOf(m)), m];
        if (done.has(m)) continue;
        const c = visit(m);
        if (c) return c;
      }
      stack.pop();
      onStack.delete(n);
      done.add(n);
      return null;
    };
    const c = visit(start);
    if (c) {
      out.push(c);
      c.forEach((n) => done.add(n));
    }
  }
  return out;
}

// The yard: where tests, benchmarks and tools stand. A test beside a room (core/src/<room>/…_test.ts) may
// import its own room, rooms on lower floors, the kit (core/testing) and the harness (core/harness);
// tests/, bench/ and tools/ reach core only through its faces (FACES below).
const coreJson = await Deno.readTextFile(`${root}core/deno.json`).then(JSON.parse, () => ({ exports: {} }));
/** The published faces: every file the export map of core/deno.json lists. */
const PUBLISHED = new Set(
  Object.values((coreJson.exports ?? {}) as Record<string, string>).map((p) =>
    `core/${p.replace(/^\.\//, "")}`
  ),
);
/** Per yard folder, the unpublished faces it may use besides the published ones (a folder ends in "/"). */
const FACES: Record<string, readonly string[]> = {
  tests: ["core/ops.ts", "core/harness/"],
  bench: ["core/ops.ts", "core/harness/"],
  // gen_api_client.ts reads the OpenAPI document of the in-process app the harness builds over a test database.
  tools: ["core/ops.ts", "core/verify.ts", "core/harness/app.ts", "core/harness/db.ts"],
};
const isDir = (p: string) => Deno.stat(p).then((s) => s.isDirectory, () => false);
for (const [yard, faces] of Object.entries(FACES)) {
  if (!(await isDir(`${root}${yard}`))) continue;
  for await (const file of tsFiles(`${root}${yard}`)) {
    if (rel(file).startsWith("tests/testdata/")) continue;
    for (const spec of specifiers(await Deno.readTextFile(file))) {
      if (!spec.startsWith(".")) continue;
      const target = rel(new URL(spec, `file://${file}`).pathname);
      if (!target.startsWith("core/")) continue;
      if (PUBLISHED.has(target) || faces.some((f) => f.endsWith("/") ? target.startsWith(f) : target === f)) {
        continue;
      }
      violations.push(
        `${rel(file)} imports "${spec}": ${yard}/ reaches core only through its faces ` +
          `(${[...PUBLISHED].sort().join(", ")}, ${faces.join(", ")})`,
      );
    }
  }
}
// No file under tests/ (code or data) names an adapter member: its vendor key or package name, read from the
// workspace (each adapters/<dir>/deno.json's name, `@dutlab/adapter-<key>`), so a new adapter is covered by
// itself. A vendor's expectations live in its own member (testdata/, a test beside it).
const adapterKeys: string[] = [];
if (await isDir(`${root}adapters`)) {
  for await (const m of Deno.readDir(`${root}adapters`)) {
    if (!m.isDirectory) continue;
    const name = await Deno.readTextFile(`${root}adapters/${m.name}/deno.json`)
      .then((t) => JSON.parse(t).name as string | undefined, () => undefined);
    const key = name?.replace(/^@dutlab\/adapter-/, "");
    if (key && key !== name) adapterKeys.push(key);
  }
}
async function* allFiles(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    const p = `${dir}/${e.name}`;
    if (e.isDirectory && !e.name.startsWith(".")) yield* allFiles(p);
    else if (e.isFile) yield p;
  }
}
if (adapterKeys.length && (await isDir(`${root}tests`))) {
  for await (const file of allFiles(`${root}tests`)) {
    const text = await Deno.readTextFile(file).catch(() => "");
    const named = adapterKeys.filter((k) => text.includes(k));
    if (named.length) {
      violations.push(
        `${rel(file)} names the adapter member ${
          named.join(", ")
        }: a test outside a member names no member ` +
          `(pick adapters from the enabled modules by role or capability; vendor data goes in adapters/<key>/testdata/)`,
      );
    }
  }
}

/** The rooms that assemble the in-process app: a test of any room may drive it ("with or without the app"). */
const APP_ROOMS: ReadonlySet<string> = new Set(["runtime", "http"]);
for await (const file of hasSrc ? tsFiles(`${root}core/src`) : []) {
  if (!/_test\.tsx?$/.test(file)) continue;
  const from = roomOf(file)!;
  const f = floorOf.get(from);
  for (const spec of specifiers(await Deno.readTextFile(file))) {
    if (!spec.startsWith(".")) continue;
    const path = new URL(spec, `file://${file}`).pathname;
    const to = roomOf(path);
    const where = `${rel(file)} imports "${spec}"`;
    if (to === null) {
      const target = rel(path);
      // Outside core: the kit, the harness, a face, data, or a local peer of tools/ (e.g. the NetBox peer).
      const allowed = /^core\/(testing|harness)\//.test(target) || /^core\/[^/]+\.tsx?$/.test(target) ||
        !/\.tsx?$/.test(target) || target.startsWith("tools/");
      if (!allowed) {
        violations.push(`${where}: a test beside a room imports core, the kit and the harness only`);
      }
      continue;
    }
    const t = floorOf.get(to);
    // The in-process app (services, worker and routes) is what a room's test may drive from any floor.
    if (to === from || APP_ROOMS.has(to) || f === undefined || t === undefined) continue;
    if (t > f) {
      violations.push(`${where}: a test of ${from} (floor ${f}) may not reach up to ${to} (floor ${t})`);
    } else if (t === f && !SAME_FLOOR.has(`${from} → ${to}`)) {
      violations.push(`${where}: a test of ${from} may not import ${to} on its own floor`);
    }
  }
}

// File-level import cycles inside one folder (any folder of the repository).
const fileEdges = new Map<string, Set<string>>();
for await (const file of tsFiles(root.replace(/\/$/, ""))) {
  if (/\/(node_modules|out|dist)\//.test(file)) continue;
  const dir = file.slice(0, file.lastIndexOf("/"));
  for (const spec of specifiers(await Deno.readTextFile(file))) {
    if (!spec.startsWith(".")) continue;
    const target = new URL(spec, `file://${file}`).pathname;
    if (target === file || target.slice(0, target.lastIndexOf("/")) !== dir) continue;
    if (!fileEdges.has(rel(file))) fileEdges.set(rel(file), new Set());
    fileEdges.get(rel(file))!.add(rel(target));
  }
}
for (const cycle of roomCycles(fileEdges)) {
  violations.push(`file cycle inside a folder: ${cycle.join(" → ")}`);
}

// The CLI: HTTP API only (see the header). No cli/ folder (a temp tree of the tests): nothing to check.
const cliDir = `${root}cli`;
if (await Deno.stat(cliDir).then((s) => s.isDirectory, () => false)) {
  for await (const file of tsFiles(cliDir)) {
    for (const spec of specifiers(await Deno.readTextFile(file))) {
      const target = spec.startsWith(".") ? new URL(spec, `file://${file}`).pathname : null;
      const inside = target !== null && /^(core|adapters|checks|plugins)\//.test(target.slice(root.length));
      // `@dutlab/cli` itself is what its JSDoc examples import.
      if ((spec.startsWith("@dutlab/") && spec !== "@dutlab/cli") || inside) {
        violations.push(
          `${rel(file)} imports "${spec}": the CLI talks to the service over the HTTP API only`,
        );
      }
    }
  }
}

if (violations.length) {
  console.error(`Boundary violations (${violations.length}):\n  ${violations.join("\n  ")}`);
  Deno.exit(1);
}
console.log(
  "boundaries: ok (adapters, checks and plugins import only @dutlab/core and their own dependencies; " +
    "core/src imports keep to the floors, no folder cycle, tests beside rooms and tests/, bench/, tools/ keep " +
    "to their faces, no file cycle inside a folder, no file of tests/ names an adapter, the CLI imports no member)",
);
