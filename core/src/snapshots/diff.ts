/**
 * Snapshot diffs and change history (docs/polling.md "Diffs and change history"): RFC 6902 JSON Patch between two
 * payloads of one device label, without the adapter's volatile paths unless asked, and the polls whose
 * payload changed. Payloads are content-addressed, so equal hashes never need a diff.
 */
import { type Kysely, sql } from "kysely";
import { createPatch, type Operation, Pointer } from "rfc6902";
import { diffArrays } from "diff";
import type { Database } from "../db/schema.ts";
import type { Registry } from "../registry.ts";
import { stripVolatile, volatileFor } from "./volatile.ts";
import { payloadsBySha, previousSnapshotId } from "./series.ts";

/** `exclude` (default): volatile paths are left out of both payloads; `include`: the payloads as stored. */
export type VolatileMode = "exclude" | "include";

/** One change in words: where, what was there, what is there now (absent = the member did not exist). */
export interface ChangeSummary {
  op: "add" | "remove" | "replace" | "move" | "copy";
  path: string;
  before?: unknown;
  after?: unknown;
}

export interface PayloadDiff {
  /** RFC 6902 operations that turn the older payload into the newer one (applied in order). */
  patch: Operation[];
  /** One entry per operation, in the same order. */
  changes: ChangeSummary[];
}

/**
 * Arrays are diffed by their elements' JSON text with Myers' algorithm (npm `diff`, O(ND)): rfc6902's
 * own array diff is a full edit-distance matrix with nested diffs per cell, seconds for a few hundred
 * rules and a stack overflow for thousands. An element removed and another added at the same place become
 * a nested diff of the two (a changed rule shows its changed member), the rest plain add and remove.
 */
function arrayDiff(input: unknown, output: unknown, ptr: Pointer): Operation[] | void {
  if (!Array.isArray(input) || !Array.isArray(output)) return undefined;
  // Elements compared by their JSON text: stored payloads are parsed from canonical JSON, so equal elements
  // have equal key order and equal text. The common head and tail are skipped before Myers' diff.
  const ka = input.map((x) => JSON.stringify(x));
  const kb = output.map((x) => JSON.stringify(x));
  let head = 0;
  while (head < ka.length && head < kb.length && ka[head] === kb[head]) head++;
  let tail = 0;
  while (
    tail < ka.length - head && tail < kb.length - head &&
    ka[ka.length - 1 - tail] === kb[kb.length - 1 - tail]
  ) tail++;
  const parts = diffArrays(ka.slice(head, ka.length - tail), kb.slice(head, kb.length - tail));
  const base = ptr.toString();
  const ops: Operation[] = [];
  let at = head; // index in the document as the operations so far left it
  let ia = head;
  let ib = head;
  for (let p = 0; p < parts.length; p++) {
    const part = parts[p]!; // p < parts.length
    const n = part.value.length;
    if (!part.added && !part.removed) {
      at += n;
      ia += n;
      ib += n;
      continue;
    }
    const next = parts[p + 1];
    if (part.removed && next?.added) {
      const m = next.value.length;
      const paired = Math.min(n, m);
      for (let k = 0; k < paired; k++) {
        const prefix = `${base}/${at + k}`;
        for (const op of createPatch(input[ia + k], output[ib + k], arrayDiff)) {
          ops.push({ ...op, path: prefix + op.path } as Operation);
        }
      }
      at += paired;
      for (let k = paired; k < n; k++) ops.push({ op: "remove", path: `${base}/${at}` });
      for (let k = paired; k < m; k++) {
        ops.push({ op: "add", path: `${base}/${at++}`, value: output[ib + k] });
      }
      ia += n;
      ib += m;
      p++;
      continue;
    }
    if (part.removed) {
      for (let k = 0; k < n; k++) ops.push({ op: "remove", path: `${base}/${at}` });
      ia += n;
    } else {
      for (let k = 0; k < n; k++) ops.push({ op: "add", path: `${base}/${at++}`, value: output[ib + k] });
      ib += n;
    }
  }
  return ops;
}

/** The JSON Patch from `before` to `after`, each operation with its before/after values. */
export function diffPayloads(before: unknown, after: unknown): PayloadDiff {
  const patch = createPatch(before, after, arrayDiff);
  // Each operation's "before" is read from the document as the preceding operations left it (RFC 6902
  // applies them in order, so array indexes refer to that intermediate document). The document is built
  // copy-on-write from `before` (see applyOne) instead of a structuredClone of the whole payload, which cost
  // more than the diff itself for a 1 MiB payload with a handful of changes.
  const doc = { root: before };
  const owned = new WeakSet<object>();
  const changes: ChangeSummary[] = [];
  for (const op of patch) {
    if (op.op === "test") continue;
    const prior = readAt(doc.root, op.path);
    const s: ChangeSummary = { op: op.op, path: op.path };
    if (op.op !== "add" || (prior.found && !Array.isArray(parentOf(doc.root, op.path)))) {
      if (prior.found) s.before = prior.value;
    }
    if (op.op === "add" || op.op === "replace") s.after = op.value;
    if (op.op === "move" || op.op === "copy") s.after = readAt(doc.root, op.from).value;
    changes.push(s);
    applyOne(doc, op, owned);
  }
  return { patch, changes };
}

const tokensOf = (path: string) => Pointer.fromJSON(path).tokens.slice(1);

function readAt(root: unknown, path: string): { found: boolean; value?: unknown } {
  let v: unknown = root;
  for (const t of tokensOf(path)) {
    if (typeof v !== "object" || v === null || !Object.hasOwn(v, t)) return { found: false };
    v = (v as Record<string, unknown>)[t];
  }
  return { found: true, value: v };
}

function parentOf(root: unknown, path: string): unknown {
  const tokens = tokensOf(path).slice(0, -1);
  let v = root;
  for (const t of tokens) v = (v as Record<string, unknown>)?.[t];
  return v;
}

/** Sets an own member, also for a key such as `__proto__` that plain assignment would treat specially. */
function setOwn(o: Record<string, unknown>, k: string, v: unknown) {
  Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true });
}

/**
 * Applies one operation copy-on-write: no object of either payload is ever changed. Each container on the
 * operation's path is shallow-copied the first time an operation goes through it; copies are `owned` and
 * changed in place afterwards, so many operations on one large array copy it once. Values read into the
 * change summaries stay as they were when read.
 */
function applyOne(doc: { root: unknown }, op: Operation, owned: WeakSet<object>) {
  const fail = (why: string): never => {
    throw new Error(`JSON Patch operation ${op.op} ${op.path} does not apply: ${why}`);
  };
  if (op.op === "test") return;
  if (op.op === "move" || op.op === "copy") {
    const from = readAt(doc.root, op.from);
    if (!from.found) fail(`nothing at ${op.from}`);
    if (op.op === "move") applyOne(doc, { op: "remove", path: op.from }, owned);
    applyOne(doc, { op: "add", path: op.path, value: from.value }, owned);
    return;
  }
  const tokens = tokensOf(op.path);
  const last = tokens.at(-1);
  if (last === undefined) {
    doc.root = op.op === "remove" ? undefined : op.value;
    return;
  }
  const own = (v: unknown): Record<string, unknown> => {
    if (typeof v !== "object" || v === null) {
      return fail("the path goes through a value that is not a container");
    }
    if (owned.has(v)) return v as Record<string, unknown>;
    const c = Array.isArray(v) ? v.slice() : { ...v };
    owned.add(c);
    return c as Record<string, unknown>;
  };
  let parent = own(doc.root);
  doc.root = parent;
  for (const t of tokens.slice(0, -1)) {
    if (!Object.hasOwn(parent, t)) fail(`no member ${t}`);
    const child = own(parent[t]);
    if (Array.isArray(parent)) parent[Number(t)] = child;
    else setOwn(parent, t, child);
    parent = child;
  }
  if (Array.isArray(parent)) {
    const i = last === "-" && op.op === "add" ? parent.length : Number(last);
    const max = op.op === "add" ? parent.length : parent.length - 1;
    if (!/^(0|[1-9][0-9]*|-)$/.test(last) || !Number.isInteger(i) || i > max) fail(`no index ${last}`);
    if (op.op === "add") parent.splice(i, 0, op.value);
    else if (op.op === "remove") parent.splice(i, 1);
    else parent[i] = op.value;
  } else {
    if (op.op !== "add" && !Object.hasOwn(parent, last)) fail(`no member ${last}`);
    if (op.op === "remove") delete parent[last];
    else setOwn(parent, last, op.value);
  }
}

interface SnapRow {
  id: string;
  device_id: string;
  endpoint_label: string;
  payload_sha256: string;
  collected_at: Date | string;
  vendor: string;
}

async function snapRow(db: Kysely<Database>, id: string): Promise<SnapRow | undefined> {
  if (!/^\d{1,19}$/.test(id) || BigInt(id) > 2n ** 63n - 1n) return undefined;
  return await db.selectFrom("snapshots as s").innerJoin("devices as d", "d.id", "s.device_id")
    .select([
      sql<string>`s.id::text`.as("id"),
      "s.device_id",
      "s.endpoint_label",
      "s.payload_sha256",
      "s.collected_at",
      "d.vendor",
    ])
    .where(sql`s.id`, "=", sql`${id}::bigint`).executeTakeFirst();
}

/** The diff of one snapshot against another, as the API answers it. */
export interface SnapshotDiffView extends PayloadDiff {
  snapshotId: string;
  againstId: string;
  deviceId: string;
  endpointLabel: string;
  payloadSha256: string;
  againstPayloadSha256: string;
  collectedAt: string;
  againstCollectedAt: string;
  volatile: VolatileMode;
  /** The patterns left out of both payloads (empty with `volatile=include`). */
  volatilePaths: string[];
  /** True when nothing but volatile paths (or nothing at all) differs. */
  equal: boolean;
}

export type SnapshotDiffResult =
  | { ok: SnapshotDiffView }
  | { notFound: string }
  | { noPrevious: true }
  | { labelMismatch: { snapshot: string; against: string } };

/**
 * Snapshot `id` compared with `against` (default: the previous snapshot of the same device and label).
 * The patch turns the `against` payload into this snapshot's.
 */
export async function snapshotDiff(
  db: Kysely<Database>,
  registry: Registry,
  id: string,
  opts: { against?: string; volatile?: VolatileMode },
): Promise<SnapshotDiffResult> {
  const mode = opts.volatile ?? "exclude";
  const s = await snapRow(db, id);
  if (!s) return { notFound: `No snapshot with id "${id}"` };
  let other: SnapRow | undefined;
  if (opts.against !== undefined) {
    other = await snapRow(db, opts.against);
    if (!other) return { notFound: `No snapshot with id "${opts.against}" (query.against)` };
    if (other.endpoint_label !== s.endpoint_label) {
      return { labelMismatch: { snapshot: s.endpoint_label, against: other.endpoint_label } };
    }
  } else {
    // Not through the view ordered by id (that sorts every row): the series' own indexes (series.ts).
    const prev = await previousSnapshotId(db, s.device_id, s.endpoint_label, s.id);
    if (!prev) return { noPrevious: true };
    other = await snapRow(db, prev);
    if (!other) return { noPrevious: true };
  }
  const patterns = mode === "include" ? [] : [...volatileFor(registry, s.vendor, s.endpoint_label)];
  const view = (d: PayloadDiff): SnapshotDiffView => ({
    snapshotId: s.id,
    againstId: other.id,
    deviceId: s.device_id,
    endpointLabel: s.endpoint_label,
    payloadSha256: s.payload_sha256,
    againstPayloadSha256: other.payload_sha256,
    collectedAt: new Date(s.collected_at).toISOString(),
    againstCollectedAt: new Date(other.collected_at).toISOString(),
    volatile: mode,
    volatilePaths: patterns,
    equal: d.patch.length === 0,
    ...d,
  });
  if (s.payload_sha256 === other.payload_sha256) return { ok: view({ patch: [], changes: [] }) };
  const p = await payloadsBySha(db, [s.payload_sha256, other.payload_sha256]);
  const d = diffPayloads(
    stripVolatile(p.get(other.payload_sha256), patterns),
    stripVolatile(p.get(s.payload_sha256), patterns),
  );
  return { ok: view(d) };
}
