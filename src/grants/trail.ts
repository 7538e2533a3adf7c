/**
 * What the broker writes of the call trail, whose table this domain owns
 * (grants/repositories/call-records.ts): the records of checks, and their outcomes.
 */
export {
  completeCallRecord,
  findCallForOutcome,
  insertCallRecord,
  insertCallRecords,
  type CallRecordRow,
  type NewCallRecord,
} from './repositories/call-records';
