/**
 * What a trimmed string that must not be empty (`.trim().min(1)`) accepts, as an OpenAPI `pattern`: at least
 * one character that is not white space (JSON Schema patterns are unanchored).
 */
export const NOT_BLANK = "\\S";
