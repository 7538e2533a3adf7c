import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import type { JsonSchemaType, JsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import type { ToolMapping } from './config';
import type { Upstream } from './upstream/upstream';

/** One upstream tool the config maps to a grant tool, with its input schema compiled once. */
export interface MappedTool {
  name: string;
  mapping: ToolMapping;
  /** As the agent sees it: the upstream's tool without `outputSchema` (see `agentFacing`). */
  tool: Tool;
  /** Why `args` do not fit the input schema (ajv's words: property and rule, never a value), or undefined. */
  argumentsProblem(args: unknown): string | undefined;
}

/**
 * The upstream tools the config names, each with its input schema compiled once by ajv 8 (as the
 * MCP SDK ships it: a bare `ajv` here would resolve to the root's ajv 6 from the compiled gateway).
 * Upstream tools the config does not name are dropped here, so nothing downstream can list or call
 * them. A schema ajv cannot compile makes its tool unusable (never listed, every call refused)
 * rather than callable without validation. Compiled again when the upstream's tool list changes.
 */
export class ToolCatalog {
  private catalog?: Promise<Map<string, MappedTool>>;
  private readonly ajv = new AjvJsonSchemaValidator();

  constructor(
    private readonly upstream: Upstream,
    private readonly mappings: Record<string, ToolMapping>,
  ) {
    upstream.onToolsChanged(() => {
      this.catalog = undefined;
    });
  }

  async tools(): Promise<Map<string, MappedTool>> {
    this.catalog ??= this.compile().catch((error: unknown) => {
      this.catalog = undefined;
      throw error;
    });
    return this.catalog;
  }

  async tool(name: string): Promise<MappedTool | undefined> {
    // Own properties only: a tool named `__proto__` or `constructor` is not in any config.
    if (!Object.hasOwn(this.mappings, name)) return undefined;
    return (await this.tools()).get(name);
  }

  private async compile(): Promise<Map<string, MappedTool>> {
    const catalog = new Map<string, MappedTool>();
    for (const tool of await this.upstream.listTools()) {
      if (!Object.hasOwn(this.mappings, tool.name) || catalog.has(tool.name)) continue;
      const validator = this.validator(tool);
      if (!validator) continue;
      catalog.set(tool.name, {
        name: tool.name,
        mapping: this.mappings[tool.name]!,
        tool: agentFacing(tool),
        argumentsProblem: (args) => {
          const validation = validator(args);
          return validation.valid ? undefined : validation.errorMessage;
        },
      });
    }
    return catalog;
  }

  private validator(tool: Tool): JsonSchemaValidator<unknown> | undefined {
    try {
      return this.ajv.getValidator(withoutMetaSchema(tool.inputSchema) as JsonSchemaType);
    } catch (error) {
      process.stderr.write(
        `mcp-gateway: tool ${tool.name} is not offered: its input schema does not compile (${(error as Error).message})\n`,
      );
      return undefined;
    }
  }
}

/**
 * ajv's default dialect is draft-07 and it refuses a `$schema` it does not know (2020-12, which
 * servers built on zod 4 declare); the keywords tools use mean the same in both.
 */
function withoutMetaSchema(schema: Tool['inputSchema']): Record<string, unknown> {
  const { $schema: _metaSchema, ...rest } = schema as Record<string, unknown>;
  return rest;
}

/**
 * The tool as an agent sees it. Without `outputSchema`: a refusal's `structuredContent` (`{reason, …}`)
 * can never match the tool's own output schema, and an MCP client that holds a result to the
 * schema it was shown would throw the refusal away. The upstream's structured content still passes.
 */
function agentFacing(tool: Tool): Tool {
  const { outputSchema: _outputSchema, execution: _execution, ...rest } = tool;
  return rest;
}
