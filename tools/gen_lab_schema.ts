/**
 * `deno task lab:schema`: write the JSON Schema of a lab file (draft 2020-12, generated from the zod schemas of
 * core/src/lab/file.ts) to schemas/lab.schema.json. `--check` exits 1 when the committed copy is stale.
 */
import { LAB_SCHEMA_URL, labJsonSchemaText } from "../core/ops.ts";

const text = labJsonSchemaText();
if (Deno.args.includes("--check")) {
  const committed = await Deno.readTextFile(LAB_SCHEMA_URL).catch(() => "");
  if (committed !== text) {
    console.error("schemas/lab.schema.json is stale: run deno task lab:schema");
    Deno.exit(1);
  }
  console.log("schemas/lab.schema.json is current");
} else {
  await Deno.mkdir(new URL(".", LAB_SCHEMA_URL), { recursive: true });
  await Deno.writeTextFile(LAB_SCHEMA_URL, text);
  console.log("wrote schemas/lab.schema.json");
}
