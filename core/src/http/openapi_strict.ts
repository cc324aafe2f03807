/**
 * The served document as strict as the service (issue 46 point 2): what the zod schemas cannot say through
 * the OpenAPI generator is written in when the document is built, from the same sources the service
 * enforces: the registry's lists (`fromRegistry`), zod's UUID grammar, and the input limits every request
 * obeys (input_guard.ts).
 * @module
 */
import { z } from "@hono/zod-openapi";
import { REGISTRY_ENUM, type RegistryList } from "../api/registry_enum.ts";
import type { Registry } from "../registry.ts";
import { INPUT_LIMITS } from "./input_guard.ts";

/** The registry's lists, as the document's enums. */
export type DocumentEnums = Record<RegistryList, string[]>;

/** The lists of a registry: every vendor key, device role, check id and plan id it knows. */
export function documentEnums(registry: Registry): DocumentEnums {
  return {
    vendors: registry.vendors.map((v) => v.key),
    deviceRoles: [...registry.deviceRoles],
    checks: registry.checks.map((c) => c.check.id),
    plans: registry.planCatalog.plans.map((p) => p.identifier),
  };
}

/** zod's UUID grammar (RFC 9562 versions and variant, nil and max): what `z.uuid()` accepts. */
const UUID_PATTERN = z.regexes.uuid().source;

type Node = Record<string, unknown>;
const isNode = (v: unknown): v is Node => typeof v === "object" && v !== null && !Array.isArray(v);

/** Every schema node below `v` (depth first), `$ref`s not followed. */
function* nodes(v: unknown): Generator<Node> {
  if (Array.isArray(v)) { for (const x of v) yield* nodes(x); }
  else if (isNode(v)) {
    yield v;
    for (const x of Object.values(v)) yield* nodes(x);
  }
}

/**
 * Write the registry's lists in as enums beside their `x-dutlab-registry-enum` marker (a list that is empty,
 * say no plan catalog, leaves the string as it is), and tighten what the requests take: a UUID gets zod's pattern, a number without bounds the
 * magnitude limit of every request.
 */
export function tightenDocument(doc: Node, enums: DocumentEnums): void {
  for (const n of nodes(doc)) {
    // The marker stays, naming the list: a client generated for every instance leaves such enums out.
    const list = n[REGISTRY_ENUM] as RegistryList | undefined;
    if (list !== undefined && enums[list].length) n.enum = [...enums[list]];
  }
  for (const n of requestSchemas(doc)) {
    if (n.type === "string" && n.format === "uuid" && n.pattern === undefined) n.pattern = UUID_PATTERN;
    if (n.type === "number" || n.type === "integer") {
      n.maximum ??= INPUT_LIMITS.maxAbsNumber;
      n.minimum ??= -INPUT_LIMITS.maxAbsNumber;
    }
  }
}

/** The schema nodes requests are validated against: parameters and bodies, with the components they use. */
function requestSchemas(doc: Node): Node[] {
  const components = ((doc.components as Node | undefined)?.schemas ?? {}) as Record<string, Node>;
  const roots: unknown[] = [];
  for (const item of Object.values((doc.paths ?? {}) as Record<string, Node>)) {
    for (const op of Object.values(item)) {
      if (!isNode(op)) continue;
      roots.push(((op.parameters ?? []) as Node[]).map((p) => p.schema));
      roots.push(((op.requestBody as Node | undefined)?.content as Node | undefined) ?? {});
    }
  }
  const out = new Set<Node>();
  const seen = new Set<string>();
  while (roots.length) {
    for (const n of nodes(roots.pop())) {
      out.add(n);
      const ref = typeof n.$ref === "string" ? n.$ref.split("/").pop()! : undefined;
      if (ref && !seen.has(ref) && components[ref]) {
        seen.add(ref);
        roots.push(components[ref]);
      }
    }
  }
  return [...out];
}
