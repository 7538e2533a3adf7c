/**
 * Where a request's time goes, for whoever wants to know (the bench's table of a check's stages):
 * the code names its stages, a tracer made in composition times them or does nothing.
 */
export interface Tracer {
  /** Runs `work` as the stage `name`; a promise is timed until it settles. `attributes`: never an argument or a token. */
  span<T>(name: string, work: () => T, attributes?: Record<string, string | number | boolean>): T;
}

export const NO_TRACING: Tracer = { span: (_name, work) => work() };
