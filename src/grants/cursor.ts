/** The lists of grants, calls and approvals page with the service's one cursor (kernel/cursor.ts). */
export { decodeCursor, encodeCursor } from '../kernel/cursor';
