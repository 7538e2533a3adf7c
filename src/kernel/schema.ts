import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

// One zod instance for validation and for the OpenAPI document.
extendZodWithOpenApi(z);

export { z };

export const timestamp = z.iso.datetime({ offset: false }).openapi({ example: '2026-11-22T10:00:00.000Z' });

export const listLimit = (max = 200, fallback = 50) =>
  z.coerce
    .number()
    .int()
    .min(1)
    .max(max)
    .default(fallback)
    .openapi({ description: `Page size, 1..${max}` });

export const cursor = z.string().max(512).optional().openapi({ description: 'nextCursor of the previous page' });

export const page = <T extends z.ZodType>(item: T) => z.object({ items: z.array(item), nextCursor: z.string().nullable() });

/** A tool's name, as connections enable it and grants and checks name it. */
export const ToolName = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/, 'letters, digits and . _ : / -, at most 128')
  .openapi({ example: 'repos.read_file' });

/** Ids are validated loosely on the way in: an id of the wrong shape is simply not found. */
export const idParam = (example: string) => z.string().min(1).max(64).openapi({ example });

/** A timestamp of the API (ISO 8601 UTC with milliseconds); `null` stays null. */
export function iso(date: Date | string): string;
export function iso(date: Date | string | null | undefined): string | null;
export function iso(date: Date | string | null | undefined): string | null {
  if (date === null || date === undefined) return null;
  return (date instanceof Date ? date : new Date(date)).toISOString();
}
