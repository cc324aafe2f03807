/**
 * The PAN-OS XML API answer: `<response status="success|error" code="..">` with a `<result>` or a `<msg>`,
 * parsed to JSON by fast-xml-parser with attributes kept (`@name`), every value a string (no number
 * guessing: `9.1.12-h3`, serials, `yes`/`no` stay as sent) and list elements (`entry`, `member`, `job`,
 * `line`) always arrays, so one rule and many rules read the same way.
 */
import { XMLParser, XMLValidator } from "fast-xml-parser";
import { DeviceError, type DeviceResponse } from "@dutlab/core";

/** Elements PAN-OS repeats for lists; always parsed as arrays. */
const LIST_ELEMENTS = new Set(["entry", "member", "job", "line"]);

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: "@",
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: true,
  isArray: (name) => LIST_ELEMENTS.has(name),
});

export type Obj = Record<string, unknown>;
export const isObj = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** The stored form of one answer: the `<response>` element, its `@status` and `@code` kept. */
export interface XmlEnvelope extends Obj {
  response: Obj & { "@status"?: string; "@code"?: string; result?: unknown; msg?: unknown };
}

/** Parse XML text to JSON (the simulator and the tests use the same conventions). */
export function parseXml(text: string): Obj {
  return parser.parse(text) as Obj;
}

/** Text of a PAN-OS `<msg>` (a string, `<line>`s, or nested), for an error message. */
export function messageText(msg: unknown): string {
  if (typeof msg === "string") return msg;
  if (Array.isArray(msg)) return msg.map(messageText).filter(Boolean).join("; ");
  if (isObj(msg)) {
    return Object.entries(msg).filter(([k]) => !k.startsWith("@")).map(([, v]) => messageText(v)).filter(
      Boolean,
    ).join("; ");
  }
  return "";
}

/** Why an answer is not the device's XML API, or null when it may be. */
function notXml(res: DeviceResponse): string | null {
  const type = res.headers.get("content-type") ?? "";
  const head = res.text.trimStart().slice(0, 200).toLowerCase();
  if (/text\/html/i.test(type) || head.startsWith("<!doctype html") || head.startsWith("<html")) {
    return "answered an HTML page, not the XML API (the web interface, a captive portal or a proxy's page?)";
  }
  if (head === "") return "answered an empty body, not an XML API <response>";
  return null;
}

/**
 * Read one XML API answer: HTTP 403, `code="403"` or `code="22"` (session timed out) -> `auth_failed`; another non-2xx -> `http_error`; an
 * HTML page, a body that is not well-formed XML (e.g. truncated) or no `<response>` -> `protocol_error`;
 * `status="error"` -> `protocol_error` with the device's message, unless `allowCodes` names its code. The
 * `secrets` are cut out of any device text put in a message.
 */
export function readEnvelope(
  res: DeviceResponse,
  call: string,
  secrets: readonly string[],
  allowCodes: readonly string[] = [],
): XmlEnvelope {
  const scrub = (s: string) =>
    secrets.filter((x) => x.length > 0).reduce((acc, x) => acc.split(x).join("[redacted]"), s).slice(0, 300);
  const html = notXml(res);
  if (res.status === 403 && html === null) {
    throw new DeviceError("auth_failed", `API key or credentials refused: HTTP 403 from ${call}`);
  }
  if (res.status < 200 || res.status > 299) {
    throw new DeviceError("http_error", `${call} answered HTTP ${res.status}`);
  }
  if (html !== null) throw new DeviceError("protocol_error", `${call} ${html}`);
  const valid = XMLValidator.validate(res.text);
  if (valid !== true) {
    throw new DeviceError(
      "protocol_error",
      `${call} answered XML that is not well-formed (truncated?): ${
        scrub(valid.err.msg)
      } at line ${valid.err.line}`,
    );
  }
  const doc = parseXml(res.text);
  const response = doc.response;
  if (!isObj(response)) {
    throw new DeviceError("protocol_error", `${call} answered XML without the XML API's <response> element`);
  }
  const status = response["@status"];
  const code = typeof response["@code"] === "string" ? response["@code"] : undefined;
  if (status !== "success") {
    const text = scrub(
      messageText(response.msg ?? (isObj(response.result) ? response.result.msg : undefined)),
    );
    // 403: invalid credential or key; 22: session timed out (PAN-OS XML API error codes).
    if (code === "403" || code === "22") {
      throw new DeviceError(
        "auth_failed",
        `API key or credentials refused by ${call}: code ${code}${text ? ` (${text})` : ""}`,
      );
    }
    if (code === undefined || !allowCodes.includes(code)) {
      throw new DeviceError(
        "protocol_error",
        `${call} answered status "${String(status)}"${code ? ` code ${code}` : ""}${text ? `: ${text}` : ""}`,
      );
    }
  }
  return { response } as XmlEnvelope;
}
