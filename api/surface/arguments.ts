/**
 * A tool call's arguments checked against the tool's own input schema before anything reads
 * them: wrong types, unknown or missing arguments are the JSON-RPC error invalid-params
 * (-32602) with our message naming the argument, never an exception from deep inside a tool
 * (`String({toString: 1})` throws "Cannot convert object to primitive value", which the SDK
 * would answer as -32603 with that internal message). The schemas are the ones `tools/list`
 * shows, compiled once per tool by the SDK's own Ajv validator.
 */

import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { NO_CONTROL_CHARS, NO_CONTROL_CHARS_MULTILINE } from '../schemas.ts';

type Check = (input: unknown) => { valid: boolean; errorMessage?: string | undefined };

export class ToolArguments {
  readonly #ajv = new AjvJsonSchemaValidator();
  readonly #checks = new Map<string, Check>();

  /** Throws RpcError(InvalidParams) unless `args` match `schema` (a tool's inputSchema). */
  check(tool: string, schema: Record<string, unknown>, args: Record<string, unknown>): void {
    const properties = (schema.properties ?? {}) as Record<string, unknown>;
    const unknown = Object.keys(args).filter((k) => !Object.hasOwn(properties, k));
    if (unknown.length > 0) {
      throw invalidParams(tool, `unknown argument(s) ${unknown.join(', ')}`);
    }
    let check = this.#checks.get(tool);
    if (!check) {
      // biome-ignore lint/suspicious/noExplicitAny: the SDK types the schema as its own JsonSchemaType
      check = this.#ajv.getValidator(schema as any) as Check;
      this.#checks.set(tool, check);
    }
    const result = check(args);
    if (!result.valid) {
      throw invalidParams(tool, describe(result.errorMessage ?? 'they do not match the schema', properties));
    }
  }
}

/**
 * A JSON-RPC error the SDK sends as it is: its `code`, and its message without the "MCP error
 * -32602:" prefix that the SDK's own McpError puts in front (a client adds that one itself).
 */
export class RpcError extends Error {
  override readonly name = 'RpcError';
  readonly code: number;

  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

export function invalidParams(tool: string, why: string): RpcError {
  return new RpcError(ErrorCode.InvalidParams, `Invalid arguments for ${tool}: ${why}.`);
}

/**
 * Ajv's `data/id must be string, data must have required property 'id'` in our words, with the
 * allowed values where Ajv only says there are some.
 */
function describe(ajvText: string, properties: Record<string, unknown>): string {
  return ajvText
    .split(/, (?=data[/ ])/)
    .map((part) => {
      const m = /^data(\/\S*)? (.*)$/s.exec(part);
      if (!m) return part;
      const where = m[1] ? m[1].slice(1).replaceAll('/', '.') : 'arguments';
      let what = m[2]!;
      const allowed = (properties[where] as { enum?: unknown[] } | undefined)?.enum;
      if (what === 'must be equal to one of the allowed values' && allowed) {
        what = `must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}`;
      }
      for (const p of [NO_CONTROL_CHARS, NO_CONTROL_CHARS_MULTILINE]) {
        if (what === `must match pattern "${p}"`) {
          what = 'holds a control character (such as NUL) or a lone surrogate (half of a UTF-16 pair)';
        }
      }
      return `${where} ${what}`;
    })
    .join('; ');
}
