/**
 * Values the service knows only once its modules are loaded: the enabled vendors, device roles, check ids
 * and plan ids. A schema names the list it takes with {@link fromRegistry}; the OpenAPI document, built after
 * the registry, writes the list in as that schema's `enum` (http/openapi_strict.ts), so the document says
 * what this instance accepts without the schemas depending on the registry.
 * @module
 */

/** A list of the registry. */
export type RegistryList = "vendors" | "deviceRoles" | "checks" | "plans";

/**
 * The OpenAPI extension that names the list: the served document keeps it beside the `enum`, so that a
 * client meant for any instance (the CLI's, `deno task api:client`) can leave that enum out.
 */
export const REGISTRY_ENUM = "x-dutlab-registry-enum";

/** OpenAPI metadata: this string is one of the registry's `list`. */
export const fromRegistry = (list: RegistryList) => ({ [REGISTRY_ENUM]: list }) as Record<string, unknown>;
