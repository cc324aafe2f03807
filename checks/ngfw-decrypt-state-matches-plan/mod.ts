/**
 * `ngfw-decrypt-state-matches-plan`: a firewall decrypts TLS exactly when the plan demands it. Reads the
 * `decrypt_policy` snapshot through the adapter's `decryptRuleCount` fact and the plan's `tlsDecrypt`.
 *
 * @module
 */
import { type CheckDefinition, defineCheck } from "@dutlab/core";

/** The `ngfw-decrypt-state-matches-plan` pre-flight check (the module documentation says what it asks and reads). */
export default defineCheck({
  id: "ngfw-decrypt-state-matches-plan",
  coreVersion: "^1.0.0",
  description: "Firewall TLS decryption state matches the plan",
  label: "decrypt_policy",
  needs: ["decryptRuleCount"],
  evaluate(snapshot, plan, { facts }) {
    if (plan.tlsDecrypt !== "on" && plan.tlsDecrypt !== "off") {
      throw new Error(
        `plan ${plan.identifier} has tlsDecrypt ${JSON.stringify(plan.tlsDecrypt)}, not on/off`,
      );
    }
    const n = facts.decryptRuleCount(snapshot.payload);
    if (plan.tlsDecrypt === "on") {
      return n > 0
        ? { pass: true, detail: `the plan requires decrypt-on and ${n} decrypt rule(s) are configured` }
        : { pass: false, detail: "the plan requires decrypt-on but no decrypt rules are configured" };
    }
    return n === 0
      ? { pass: true, detail: "the plan requires decrypt-off and no decrypt rules are configured" }
      : { pass: false, detail: `the plan requires decrypt-off but ${n} decrypt rule(s) are configured` };
  },
}) as CheckDefinition<"decryptRuleCount">;
