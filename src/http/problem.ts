import { type ApiError, PROBLEMS } from '../kernel/errors';

/** An ApiError as the RFC 9457 problem document the API answers with. */
export function problemBody(error: ApiError, instance: string) {
  return {
    type: `https://grant-broker.dev/problems/${error.code.replaceAll('_', '-')}`,
    title: PROBLEMS[error.code].title,
    status: error.status,
    detail: error.detail ?? PROBLEMS[error.code].title,
    code: error.code,
    instance,
    ...error.extensions,
  };
}
