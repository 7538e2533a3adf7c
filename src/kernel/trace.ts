/**
 * Where a request's time goes, for whoever wants to know (the bench's table of a check's stages):
 * the code names its stages, a tracer made in composition times them or does nothing.
 */
export interface Tracer {
  /**
   * Runs `work` as the stage `name`; a promise is timed until it settles. `work` is handed the
   * tracer of the stages within this one: its spans are this span's children without an async
   * context to carry the parent across awaits (which costs every promise of the process), so the
   * stages of one slow check can be told from another's. `attributes`: never an argument or a token.
   */
  span<T>(name: string, work: (within: Tracer) => T, attributes?: Record<string, string | number | boolean>): T;
}

export const NO_TRACING: Tracer = { span: (_name, work) => work(NO_TRACING) };
