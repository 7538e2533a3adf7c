import { type ApiError } from '../../src/kernel/errors';
import { enforce } from '../../src/policy/enforce';

function refusal(reasons: string[]): ApiError {
  try {
    enforce({ allow: false, reasons });
  } catch (error) {
    return error as ApiError;
  }
  throw new Error('enforce let a refusal through');
}

describe('enforcing a decision', () => {
  it('lets an allow through', () => {
    expect(() => enforce({ allow: true, reasons: [] })).not.toThrow();
  });

  it('hides everything behind not_found when the caller may not see the thing', () => {
    expect(refusal(['grant_widening', 'not_found', 'not_connection_owner'])).toMatchObject({ code: 'not_found', status: 404 });
  });

  it('answers the lowest status first and lists every reason', () => {
    const error = refusal(['grant_widening', 'runtime_stopped', 'principal_not_in_audience']);
    expect(error).toMatchObject({ code: 'principal_not_in_audience', status: 403 });
    expect(error.extensions.reasons).toEqual(['grant_widening', 'runtime_stopped', 'principal_not_in_audience']);
  });

  it('turns a reason that is no problem code into an internal error, never an allow', () => {
    expect(refusal(['something_new'])).toMatchObject({ code: 'internal_error', status: 500 });
  });
});
