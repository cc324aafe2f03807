/**
 * Plain words for the schema errors of a lab request (issue 46 point 6). zod's own messages ("Invalid input:
 * expected record, received undefined") name its types, not what a lab file's author wrote; a message the
 * schema sets itself ("must be at least 30") is kept as it is. The field is named beside the message (a JSON
 * path into the lab file, or the request member), so a message says only what is expected.
 *
 * @module
 */
import type { ZodError } from "zod";
import { jsonPath } from "./file.ts";

/** One issue of a failed parse. */
export type Issue = ZodError["issues"][number];

/** What is expected at a path, in words, where the type alone says too little (paths with `[]` for an index). */
const EXPECTED_AT: Record<string, string> = {
  "lab": "a lab file (an object with apiVersion, kind, metadata and devices)",
  "secrets": "an object giving each credential's password by its name ({} when the file names no credential)",
  "$.metadata": "an object with the lab's name",
  "$.defaults": "an object of device fields every device takes",
  "$.credentials": "an object of credentials by name",
  "$.credentials.*": "a credential (an object with username and password)",
  "$.devices": "a list of devices",
  "$.devices[]": "a device (an object with at least a hostname)",
  "$.devices[].tags": "a list of tags",
  "$.defaults.tags": "a list of tags",
  "$.devices[].movedFrom": "a list of the device's former hostnames",
};

/** A type as zod names it, in words. */
const TYPE_WORDS: Record<string, string> = {
  string: "a string",
  number: "a number",
  int: "a whole number",
  boolean: "true or false",
  array: "a list",
  object: "an object",
  record: "an object of names to values",
  null: "null",
};

/** What zod reports it received (its English messages are the only ones this service uses), in words. */
const RECEIVED_WORDS: Record<string, string> = {
  string: "a string",
  number: "a number",
  boolean: "a boolean",
  array: "a list",
  object: "an object",
  null: "null",
};

/** The messages zod writes itself (a schema's own message never starts like these). */
const ZOD_WORDING =
  /^(Invalid input|Invalid option|Invalid key|Invalid element|Invalid string|Too small|Too big|Unrecognized key)/;

const quoted = (values: readonly unknown[]) => values.map((v) => JSON.stringify(v));

/** `a`, `a or b`, `one of a, b or c` */
function either(values: readonly string[]): string {
  if (values.length < 2) return values.join("");
  return `one of ${values.slice(0, -1).join(", ")} or ${values.at(-1)}`;
}

/** A path into the lab request as {@link EXPECTED_AT} keys it: `lab` members as `$.…`, indexes as `[]`. */
function pathKeys(path: readonly PropertyKey[]): { inLab: boolean; exact: string; member: string } {
  const inLab = path[0] === "lab" && path.length > 1;
  const parts = inLab ? path.slice(1) : path;
  const exact = (inLab ? "$" : "") +
    parts.map((p, i) => typeof p === "number" ? "[]" : `${inLab || i > 0 ? "." : ""}${String(p)}`).join("");
  // A credential is keyed by its own name: `$.credentials.<name>` reads as `$.credentials.*`.
  const member = inLab && parts[0] === "credentials" && parts.length === 2 ? "$.credentials.*" : exact;
  return { inLab, exact, member };
}

/**
 * The field of one schema issue of a lab request: a JSON path into the lab file (`$.devices[2].baseUrl`), or
 * the request's member (`secrets`, `lab` itself when it is missing), `body` for the request as a whole.
 */
export function labIssueField(issue: Pick<Issue, "path">): string {
  const path = issue.path;
  return path[0] === "lab" && path.length > 1
    ? jsonPath(path.slice(1))
    : path.map(String).join(".") || "body";
}

/**
 * The message of one schema issue of a lab request, in plain words: zod's own wording replaced by what is
 * expected, a schema's own message kept.
 *
 * @example
 * ```ts
 * import { labIssueMessage } from "./messages.ts";
 * labIssueMessage({
 *   code: "invalid_type",
 *   expected: "record",
 *   path: ["secrets"],
 *   message: "Invalid input: expected record, received undefined",
 * } as never); // "is required: an object giving each credential's password by its name (…)"
 * ```
 */
export function labIssueMessage(issue: Issue): string {
  if (!ZOD_WORDING.test(issue.message)) return issue.message;
  const { inLab, exact, member } = pathKeys(issue.path);
  switch (issue.code) {
    case "invalid_type": {
      const expected = EXPECTED_AT[exact] ?? EXPECTED_AT[member] ?? TYPE_WORDS[issue.expected] ??
        issue.expected;
      const received = /received (\w+)$/.exec(issue.message)?.[1];
      if (received === "undefined") return `is required: ${expected}`;
      const got = received ? RECEIVED_WORDS[received] ?? received : null;
      return `must be ${expected}${got ? `, not ${got}` : ""}`;
    }
    case "invalid_value":
      return `must be ${either(quoted(issue.values))}`;
    case "unrecognized_keys": {
      const where = inLab || (issue.path.length === 1 && issue.path[0] === "lab")
        ? " (GET /api/lab.schema.json lists the fields)"
        : "";
      return `has no field${issue.keys.length > 1 ? "s" : ""} ${quoted(issue.keys).join(", ")}${where}`;
    }
    case "invalid_key": {
      const inner = issue.issues.map((i) => labIssueMessage(i as Issue)).join("; ");
      return `is not a valid name${inner ? `: ${inner}` : ""}`;
    }
    case "too_small":
    case "too_big": {
      const bound = Number(issue.code === "too_small" ? issue.minimum : issue.maximum);
      const word = issue.code === "too_small"
        ? (issue.inclusive === false ? "more than" : "at least")
        : (issue.inclusive === false ? "less than" : "at most");
      if (issue.origin === "string") {
        return `must be ${word} ${bound} character${bound === 1 ? "" : "s"} long`;
      }
      if (issue.origin === "array" || issue.origin === "set") {
        return `must hold ${word} ${bound} entr${bound === 1 ? "y" : "ies"}`;
      }
      return `must be ${word} ${bound}`;
    }
    case "invalid_format":
      return issue.format === "regex" && issue.pattern
        ? `must match the pattern ${issue.pattern}`
        : `must be a valid ${issue.format}`;
    default:
      return issue.message.replace(/^Invalid input: ?/, "is not valid: ").replace(/: $/, "");
  }
}
