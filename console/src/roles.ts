// The operators' roles, listed once (no runtime imports: node's test runner transpiles and loads
// it as it is, console/test/roles.test.mjs).
import type { components } from './api/schema';

/** An operator's role: openapi.yaml's `OperatorRole`. */
export type Role = components['schemas']['OperatorRole'];

/**
 * Every role, in openapi.yaml's order: the sign-in page's choices and the roles a local sign-in
 * asks for. `satisfies` refuses a name the contract lacks; console/test/roles.test.mjs refuses a
 * list that is not the contract's enum.
 */
export const ROLES = ['support', 'finance', 'risk', 'admin'] as const satisfies readonly Role[];
