import createClient from "openapi-fetch";
import type { paths } from "./generated/dutlab-api.ts";
import { CliError, EXIT, type ExitCode, oneLine, usage } from "./_exit.ts";
import type { Config } from "./_config.ts";

/** The typed client of the service's API (types generated from its OpenAPI document). */
export type Api = ReturnType<typeof createClient<paths>>;

/** The exit code of a refused request (docs/ci.md "Command-line client", exit codes). */
export function exitFor(status: number): ExitCode {
  if (status === 404) return EXIT.notFound;
  if (status === 401 || status === 403 || status >= 500) return EXIT.unavailable;
  if (status === 400 || status === 413) return EXIT.usage;
  return EXIT.failed;
}

/** A problem+json body (or any answer) as one line: `HTTP 400: detail (field: message; …)`. */
export function problemLine(status: number, body: unknown): string {
  if (body && typeof body === "object") {
    const p = body as { title?: unknown; detail?: unknown; errors?: unknown };
    const head = typeof p.detail === "string" && p.detail
      ? p.detail
      : typeof p.title === "string"
      ? p.title
      : "";
    // The service's detail of a 400 already says each field and message (`"field": message`): a field error
    // the detail holds both parts of is not repeated.
    const errors = Array.isArray(p.errors)
      ? p.errors.filter((e: { field?: unknown; message?: unknown }) =>
        !(head.includes(String(e.field)) && head.includes(String(e.message)))
      ).map((e: { field?: unknown; message?: unknown }) => `${e.field}: ${e.message}`)
      : [];
    const tail = errors.join("; ");
    if (head || tail) {
      return oneLine(`HTTP ${status}: ${head}${head && tail ? " " : ""}${tail ? `(${tail})` : ""}`);
    }
  }
  const text = typeof body === "string" ? body : "";
  return oneLine(`HTTP ${status}${text ? `: ${text.slice(0, 300)}` : ""}`);
}

/** Throws the CliError of a refused request. */
export function refused(status: number, body: unknown): never {
  throw new CliError(problemLine(status, body), exitFor(status));
}

/** The data of an answer, or the refusal as a CliError. */
export function ok<T>(r: { data?: T; error?: unknown; response: Response }): T {
  if (r.response.ok && r.data !== undefined) return r.data;
  refused(r.response.status, r.error);
}

/** The service's API: the typed client and a plain authorised fetch (for files and not yet documented paths). */
export interface Service {
  api: Api;
  fetch(path: string, init?: RequestInit): Promise<Response>;
  url: string;
  token: string;
}

/** Connects the client: the bearer token on every request, a network error as exit 3. */
export function service(cfg: Config): Service {
  const token = cfg.token;
  if (token === null) {
    throw usage(
      "No token: set DUT_TOKEN or pass --token-file FILE (the service's admin or a named API token)",
    );
  }
  const send = async (req: Request): Promise<Response> => {
    try {
      return await fetch(req);
    } catch (e) {
      throw new CliError(
        `Cannot reach the service at ${cfg.url} (${oneLine((e as Error).message)})`,
        EXIT.unavailable,
      );
    }
  };
  const headers = { authorization: `Bearer ${token}` };
  return {
    api: createClient<paths>({ baseUrl: cfg.url, headers, fetch: send }),
    fetch: (path, init = {}) =>
      send(new Request(cfg.url + path, { ...init, headers: { ...headers, ...init.headers } })),
    url: cfg.url,
    token,
  };
}
