import { ApiProblem } from '@grant-broker/client';
import { tokenSet, type Credential } from './credentials';

/**
 * A problem the service answered, placed: `fault` names the id, tool or field at fault and `hint`
 * says what to do. The service's problem document stays as it was; these two are added beside it.
 */
export class Refusal extends Error {
  constructor(
    readonly problem: ApiProblem,
    readonly fault?: string,
    readonly hint?: string,
  ) {
    super(problem.message);
    this.name = 'Refusal';
  }
}

export interface Placed {
  fault?: string;
  hint?: string;
}

/** What a command knows about its request, for naming what a refusal is about. */
export interface Blame {
  credential: Credential;
  /** The id a 404 is about: the path's id, or the one id of the body that can be missing. */
  id?: string;
  /** Finer naming for the codes of this command (a 422 naming fields, say); undefined: the generic naming. */
  explain?: (problem: ApiProblem) => Promise<Placed | undefined>;
}

/** Runs a command's requests; a problem it answers leaves as a Refusal that names what is at fault. */
export async function blamed<T>(blame: Blame, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (!(error instanceof ApiProblem)) throw error;
    const finer = await blame.explain?.(error).catch(() => undefined);
    const generic = place(error, blame);
    throw new Refusal(error, finer?.fault ?? generic.fault, finer?.hint ?? generic.hint);
  }
}

function place(problem: ApiProblem, { credential, id }: Blame): Placed {
  const { env, what } = credential;
  if (problem.status === 401) {
    return tokenSet(credential)
      ? { fault: env, hint: `the token in ${env} was refused (invalid, expired or revoked): set ${env} to ${what}` }
      : { fault: env, hint: `${env} is not set: set it to ${what}` };
  }
  if (problem.code === 'credential_not_accepted') {
    return { fault: env, hint: `this command acts with ${what}: set ${env} to one` };
  }
  if (problem.status === 404 && id) {
    return { fault: id, hint: `${id} does not exist, or the token in ${env} may not see it` };
  }
  const fields = fieldErrors(problem).map((error) => error.path.replace(/^body\./, ''));
  if (fields.length > 0) return { fault: [...new Set(fields)].join(', ') };
  return id && problem.status < 500 ? { fault: id } : {};
}

/** The `errors` of a 400: `[{path, message}]`. */
export function fieldErrors(problem: ApiProblem): Array<{ path: string; message: string }> {
  const errors = problem.body.errors;
  if (!Array.isArray(errors)) return [];
  return errors.filter(
    (e): e is { path: string; message: string } =>
      typeof e === 'object' && e !== null && typeof (e as { path?: unknown }).path === 'string',
  );
}

/**
 * The fields a `grant_widening` names, in request-body spelling (`tools`, `writeMode`,
 * `budget.calls`, `budget.windowMs`, `expiresAt`, `resources`, `target`, `audience`): the
 * service's detail lists them after "the parent's".
 */
export function widenedFields(problem: ApiProblem): string[] {
  const listed = /widen the parent's (.+)$/.exec(problem.detail)?.[1];
  return listed ? listed.split(',').map((field) => field.trim()) : [];
}

export const joined = (values: readonly string[]) => (values.length > 0 ? values.join(', ') : '(none)');
