import { type ApiError } from '../../src/kernel/errors';
import { enforce } from '../../src/policy/enforce';

function refusal(reasons: string[], org?: Parameters<typeof enforce>[0]['org']): ApiError {
  try {
    enforce({ allow: false, reasons, org });
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

  it("names an org rule's reason as org_policy_denied with the rule's message", () => {
    const org = {
      denials: [{ package: 'org.grants.create.x', reason: 'no_write_grants', message: 'ask security' }],
      approvals: [],
      shadow: [],
    };
    const error = refusal(['no_write_grants'], org);
    expect(error).toMatchObject({ code: 'org_policy_denied', status: 403, message: 'ask security' });
    expect(error.extensions.reasons).toEqual(['no_write_grants']);
    expect(refusal(['grant_widening', 'no_write_grants'], org)).toMatchObject({ code: 'org_policy_denied' });
    expect(refusal(['not_found', 'no_write_grants'], org)).toMatchObject({ code: 'not_found' });
  });
});
