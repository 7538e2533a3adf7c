/**
 * Decisions the service asks for by name. A module that lacks one is refused at load (and at every
 * hot reload), so a policy build that forgot a package can never replace a working one. Add the
 * entrypoint of every new decision here.
 */
export const REQUIRED_ENTRYPOINTS: readonly string[] = [
  'broker/check/decision',
  'broker/outcome/decision',
  'connections/access/decision',
  'grants/attenuate/decision',
  'grants/create/decision',
  'grants/list/decision',
  'grants/read/decision',
  'grants/revoke/decision',
  'pods/access/decision',
  'runtime/access/decision',
];
