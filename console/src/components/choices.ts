import { ROLES } from '../roles';

// The API's enumerations as react-admin choices, each named by a translation key.
const choices = (prefix: string, ids: readonly string[]) => ids.map((id) => ({ id, name: `${prefix}.${id}` }));

export const HOLD_SCOPES = choices('console.hold.scopes', ['send', 'grab', 'money_out', 'all']);
export const DIRECTIONS = choices('console.adjustment.directions', ['credit', 'debit']);
export const ADJUSTMENT_STATUSES = choices('console.adjustment.statuses', ['proposed', 'applied', 'rejected', 'withdrawn']);
export const FLAG_STATUSES = choices('console.flag.statuses', ['open', 'confirmed', 'dismissed']);
export const FLAG_OUTCOMES = choices('console.flag.outcomes', ['confirmed', 'dismissed']);
export const FLAG_RULES = choices('console.flag.rules', ['chain', 'cycle', 'chats']);
export const AUDIT_ACTIONS = choices('console.audit.actions', [
  'packet_released',
  'adjustment_proposed',
  'adjustment_approved',
  'adjustment_rejected',
  'adjustment_withdrawn',
  'withdrawal_paid',
  'withdrawal_resent',
  'withdrawal_failed',
  'hold_placed',
  'hold_lifted',
  'flag_assigned',
  'flag_resolved',
]);
export const MOVEMENT_KINDS = choices('console.movement.kinds', [
  'topup',
  'send',
  'grab',
  'refund',
  'withdrawal',
  'withdrawal_return',
  'adjustment_credit',
  'adjustment_debit',
]);
export const MOVEMENT_STATUSES = choices('console.movement.statuses', ['pending', 'paid', 'failed']);
export const PACKET_STATUSES = choices('console.packet.statuses', ['open', 'finished', 'expired', 'cancelled']);
export const PACKET_KINDS = choices('console.packet.kinds', ['lucky', 'fixed']);
export const ROLE_CHOICES = choices('console.roles', ROLES);
export const TRIAL_ACCOUNTS = choices('console.reports.accounts', [
  'wallets_opening',
  'open_packets_opening',
  'pending_withdrawals_opening',
  'topups_in',
  'adjustments_in',
  'adjustments_out',
  'withdrawals_paid',
  'sent',
  'grabbed',
  'refunded',
  'wallets_closing',
  'open_packets_closing',
  'pending_withdrawals_closing',
]);
