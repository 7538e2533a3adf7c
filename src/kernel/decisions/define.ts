import { z } from 'zod';

/**
 * One Rego decision: its entrypoint, the schema of its input (the documented contract a security
 * team's rules are written against, exported as JSON Schema and enforced by `opa check`), and the
 * schema of its output. Every decision answers at least `{allow, reasons}`; `reasons` are API
 * problem codes or deny reasons, and an allow gives none.
 */
export interface DecisionDefinition<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  entrypoint: string;
  /** The Rego package, dotted: the schema ref is `schema.<package>`. */
  packageName: string;
  description: string;
  input: I;
  output: O;
}

export type DecisionInput<D extends DecisionDefinition> = z.input<D['input']>;
export type DecisionOutput<D extends DecisionDefinition> = z.output<D['output']>;

export const Verdict = z.object({ allow: z.boolean(), reasons: z.array(z.string()) });

/** An output schema: the verdict and what the decision derives beside it, consistent with itself. */
export function verdict<S extends z.ZodRawShape>(derived: S) {
  return Verdict.extend(derived).refine(
    (d) => {
      const { allow, reasons } = d as z.infer<typeof Verdict>;
      return allow === (reasons.length === 0);
    },
    {
      message: 'a decision allows exactly when it gives no reason',
    },
  );
}

export function defineDecision<I extends z.ZodType, O extends z.ZodType>(
  packageName: string,
  description: string,
  input: I,
  output: O,
): DecisionDefinition<I, O> {
  return { entrypoint: `${packageName.replaceAll('.', '/')}/decision`, packageName, description, input, output };
}
