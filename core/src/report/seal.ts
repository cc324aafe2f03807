import { canonicalJson, jcsSha256, sha256Hex } from "../util/hash.ts";
import type { Annex, DecryptAlert, ReportData } from "./types.ts";

/**
 * Licence wording printed in three languages on page 2 of the report. `lab` issues the report; `customer`,
 * when named at the run's start, is the licensee; without one the report is for the lab's internal use.
 */
export function licenseTexts(
  id: string,
  who: { lab: string; customer?: string | null } = { lab: "dutlab test lab" },
): ReportData["license"] {
  const lab = who.lab;
  const customer = who.customer ?? null;
  const to = {
    en: customer ? `to ${customer}` : `for the internal use of ${lab}`,
    "pt-BR": customer ? `para ${customer}` : `para uso interno de ${lab}`,
    es: customer ? `a ${customer}` : `para uso interno de ${lab}`,
  };
  return {
    id,
    name: `Test report licence ${id}`,
    holder: customer ?? `${lab} (internal use)`,
    issuer: lab,
    licensee: customer,
    restrictions: {
      en:
        `This report is issued by ${lab} under licence ${id} ${to.en}. It may be used only to evaluate the ` +
        `devices under test named in it and may be shared only with the parties to the engagement. Any ` +
        `alteration voids it: its integrity is proven by the report SHA-256 on the cover. Results describe the ` +
        `lab configuration recorded in the annexes and are not a certification.`,
      "pt-BR": `Este relatório é emitido por ${lab} sob a licença ${id} ${to["pt-BR"]}. Ele pode ser usado ` +
        `somente para avaliar os dispositivos sob teste nele nomeados e compartilhado somente com as partes do ` +
        `contrato. Qualquer alteração o invalida: sua integridade é comprovada pelo SHA-256 do relatório na ` +
        `capa. Os resultados descrevem a configuração do laboratório registrada nos anexos e não constituem ` +
        `uma certificação.`,
      es:
        `Este informe lo emite ${lab} bajo la licencia ${id} ${to.es}. Solo puede usarse para evaluar los ` +
        `dispositivos bajo prueba que en él se nombran y solo puede compartirse con las partes del contrato. ` +
        `Cualquier alteración lo invalida: su integridad se demuestra con el SHA-256 del informe en la portada. ` +
        `Los resultados describen la configuración del laboratorio registrada en los anexos y no constituyen ` +
        `una certificación.`,
    },
  };
}

/**
 * The body of a JSON annex: deterministic, and compact yet readable on paper. Keys are in RFC 8785
 * order; an array is one canonical JSON item per line; an object is one member per line, where a member
 * that is an array again has one item per line and any other value is canonical JSON.
 */
export function annexBody(value: unknown): string {
  const v: unknown = JSON.parse(canonicalJson(value));
  const list = (a: unknown[], indent: string) =>
    a.length ? `[\n${a.map((x) => `${indent}  ${canonicalJson(x)}`).join(",\n")}\n${indent}]` : "[]";
  if (Array.isArray(v)) return list(v, "");
  if (typeof v !== "object" || v === null) return canonicalJson(v);
  const obj = v as Record<string, unknown>;
  // RFC 8785 sorts keys by UTF-16 code units, as the default string sort does.
  const keys = Object.keys(obj).sort();
  if (!keys.length) return "{}";
  const member = (k: string) => {
    const x = obj[k];
    return `  ${canonicalJson(k)}: ${Array.isArray(x) ? list(x, "  ") : canonicalJson(x)}`;
  };
  return `{\n${keys.map(member).join(",\n")}\n}`;
}

/**
 * A JSON annex. `sha256` is the SHA-256 (lowercase hex) of the UTF-8 bytes of `body`, whatever its layout:
 * verifying needs only the body string as stored.
 *
 * @example
 * ```ts
 * import { sha256Hex } from "../util/hash.ts";
 * const a = await jsonAnnex("snapshots", "Snapshots linked to the run", [{ snapshotId: "12" }]);
 * a.sha256 === await sha256Hex(a.body); // true
 * ```
 */
export async function jsonAnnex(id: string, title: string, value: unknown): Promise<Annex> {
  const body = annexBody(value);
  return { id, title, mediaType: "application/json", sha256: await sha256Hex(body), body };
}

/**
 * Seal a report: `meta.planSnapshotSha256` = SHA-256 of the RFC 8785 canonical JSON of `plan`, then
 * `reportSha256` = SHA-256 of the RFC 8785 canonical JSON of the report without its `reportSha256`
 * member. Annex hashes are set by {@link jsonAnnex}. `verifyReport` recomputes all three.
 */
export async function sealReport(draft: Omit<ReportData, "reportSha256">): Promise<ReportData> {
  const meta = { ...draft.meta, planSnapshotSha256: await jcsSha256(draft.plan) };
  const body = { ...draft, meta };
  const reportSha256 = await jcsSha256(body);
  // Member order for readers: version, generatedAt, reportSha256 first.
  const { version, generatedAt, ...rest } = body;
  return { version, generatedAt, reportSha256, ...rest } as ReportData;
}

export type { Annex, DecryptAlert, ReportData };
