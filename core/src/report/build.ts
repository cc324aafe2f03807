import { canonicalJson, jcsSha256, sha256Hex } from "../hash.ts";
import type { Annex, DecryptAlert, ReportData } from "./types.ts";

/** Licence wording printed in three languages on page 2 of the report. */
export function licenseTexts(id: string): ReportData["license"] {
  return {
    id,
    name: `Test report licence ${id}`,
    holder: "dutlab test lab",
    restrictions: {
      en:
        `This report is issued under licence ${id}. It may be used only to evaluate the devices under test ` +
        `named in it and may be shared only with the parties to the engagement. Any alteration voids it: its ` +
        `integrity is proven by the report SHA-256 on the cover. Results describe the lab configuration ` +
        `recorded in the annexes and are not a certification.`,
      "pt-BR": `Este relatório é emitido sob a licença ${id}. Ele pode ser usado somente para avaliar os ` +
        `dispositivos sob teste nele nomeados e compartilhado somente com as partes do contrato. Qualquer ` +
        `alteração o invalida: sua integridade é comprovada pelo SHA-256 do relatório na capa. Os resultados ` +
        `descrevem a configuração do laboratório registrada nos anexos e não constituem uma certificação.`,
      es:
        `Este informe se emite bajo la licencia ${id}. Solo puede usarse para evaluar los dispositivos bajo ` +
        `prueba que en él se nombran y solo puede compartirse con las partes del contrato. Cualquier alteración ` +
        `lo invalida: su integridad se demuestra con el SHA-256 del informe en la portada. Los resultados ` +
        `describen la configuración del laboratorio registrada en los anexos y no constituyen una certificación.`,
    },
  };
}

/** A JSON annex: the body is the RFC 8785 canonical JSON of `value`; `sha256` hashes the body's UTF-8. */
export async function jsonAnnex(id: string, title: string, value: unknown): Promise<Annex> {
  const body = canonicalJson(value);
  return { id, title, mediaType: "application/json", sha256: await sha256Hex(body), body };
}

/** Compute `planSnapshotSha256` and `reportSha256` and return the finished report. */
export async function sealReport(draft: Omit<ReportData, "reportSha256">): Promise<ReportData> {
  const meta = { ...draft.meta, planSnapshotSha256: await jcsSha256(draft.plan) };
  const body = { ...draft, meta };
  const reportSha256 = await jcsSha256(body);
  // Member order for readers: version, generatedAt, reportSha256 first.
  const { version, generatedAt, ...rest } = body;
  return { version, generatedAt, reportSha256, ...rest } as ReportData;
}

export type { Annex, DecryptAlert, ReportData };
