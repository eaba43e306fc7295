import {
  useDataProvider,
  type DataProvider,
  type GetListParams,
  type GetListResult,
  type GetManyReferenceParams,
  type Identifier,
  type RaRecord,
} from 'react-admin';
import type { ApiClient } from './api/client';
import { toHttpError } from './api/errors';
import { i18nProvider } from './i18n';
import type { components } from './api/schema';
import type { Currency } from './money';

type Schemas = components['schemas'];
export type HoldScope = Schemas['HoldScope'];
export type HoldRequest = Schemas['HoldRequest'];
export type AdjustmentResult = Schemas['AdjustmentResult'];
export type AdjustmentProposal = Schemas['AdjustmentProposal'];
export type FlagResolution = Schemas['FlagResolution'];
export type HoldResult = Schemas['HoldResult'];
export type FlagResolved = Schemas['FlagResolved'];
export type TrialBalance = Schemas['TrialBalance'];
export type BusinessHours = Schemas['BusinessHours'];
export type Statement = Schemas['Statement'];
export type Reconciliation = Schemas['Reconciliation'];
export type PacketSides = Schemas['PacketSides'];
export type PacketReleased = Schemas['PacketReleased'];
export type ResendResult = Schemas['ResendResult'];

/** The lists the server pages by cursor, each walked whole by `everyPage`. */
export type PagedResource = 'adjustments' | 'withdrawals' | 'flags';
/** Every record of a paged list, up to the pages asked for: `complete` false when more were left. */
export type Walked = { records: RaRecord[]; complete: boolean; currency?: Currency };

/** The operators' own calls, beside react-admin's CRUD methods. */
export type ConsoleDataProvider = DataProvider & {
  placeHold(user: string, body: HoldRequest): Promise<HoldResult>;
  liftHold(user: string, reason: string): Promise<HoldResult>;
  approveAdjustment(reference: string): Promise<AdjustmentResult>;
  rejectAdjustment(reference: string, reason: string): Promise<AdjustmentResult>;
  withdrawAdjustment(reference: string, reason: string): Promise<AdjustmentResult>;
  resolveFlag(flagId: string, body: FlagResolution): Promise<FlagResolved>;
  /** `assignee` undefined: the signed-in operator (the server decides who that is). */
  assignFlag(flagId: string, assignee?: string): Promise<FlagResolved>;
  trialBalance(day: string): Promise<TrialBalance>;
  /** A business day's hourly view: sends, grabs, refunds and withdrawals by hour. */
  businessHours(day: string): Promise<BusinessHours>;
  /** The trial balance as the server's CSV, its text untouched. */
  trialBalanceCsv(day: string): Promise<string>;
  statement(user: string, day: string, to?: string): Promise<Statement>;
  /** The statement as the server's CSV, its text untouched. */
  statementCsv(user: string, day: string, to?: string): Promise<string>;
  reconcile(asOf?: string): Promise<Reconciliation>;
  /** A packet as Redis and the ledger each hold it, with what differs and its quarantine. */
  packetSides(packetId: string): Promise<PacketSides>;
  /** Takes a packet out of quarantine (finance or admin; the server decides), audited. */
  releasePacket(packetId: string, reason: string): Promise<PacketReleased>;
  /** Sends an overdue withdrawal's order to the payments system again (finance or admin; no money moves). */
  resendWithdrawal(withdrawalId: string, reason: string): Promise<ResendResult>;
  /** Every page of a paged list (at most `maxPages` of 100), for counts and sums. */
  everyPage(resource: PagedResource, filter?: Record<string, unknown>, maxPages?: number): Promise<Walked>;
  /** The stack's currency (from the last answer, else from the holds list). */
  currency(): Promise<Currency>;
};

export const useConsoleDataProvider = () => useDataProvider<ConsoleDataProvider>();

type Answer<T> = { data?: T; error?: unknown; response: Response };
type Page<T> = { items: T[]; next_cursor?: string | null; currency: Currency };

/**
 * react-admin's dataProvider over the operators' API (`/ops/v1`), through the typed client only.
 *
 * | resource       | call                                                     | id             |
 * | users          | getOne: GET /ops/v1/users/{user}                         | the user       |
 * | movements      | getManyReference(user): GET …/users/{user}/movements     | at#kind#ref    |
 * | user_packets   | getManyReference(user, role): GET …/users/{user}/packets | packet_id      |
 * | user_flags     | getManyReference(user): GET …/users/{user}/flags         | flag_id        |
 * | user_audit     | getManyReference(user): GET …/users/{user}/audit         | at#action#subject#n |
 * | packets        | getOne: GET /ops/v1/packets/{packet_id}                  | packet_id      |
 * |                | packetSides: GET …/packets/{packet_id}/sides             |                |
 * |                | releasePacket: POST …/packets/{packet_id}/release        |                |
 * | holds          | getList: GET /ops/v1/holds                               | the user       |
 * | flags          | getList(status): GET /ops/v1/flags                       | flag_id        |
 * | audit          | getList(day, to): GET /ops/v1/audit/{day}?to=            | day#index      |
 * | adjustments    | getList: GET /ops/v1/adjustments/pending                 | reference      |
 * |                | getOne: GET /ops/v1/adjustments/{reference}              |                |
 * |                | create: POST /ops/v1/adjustments                         |                |
 * | withdrawals    | getList(overdue, from, to): GET …/withdrawals/pending    | withdrawal_id  |
 * |                | getOne: GET /ops/v1/withdrawals/{withdrawal_id}          |                |
 * |                | resendWithdrawal: POST …/{withdrawal_id}/resend          |                |
 *
 * The server pages movements, packets, flags (a user's too), a user's audit entries, pending
 * adjustments and pending withdrawals by cursor: page n is reached through the cursors of the pages before it (kept here), and answered
 * with `pageInfo` (no total); their order is the server's. The lists the server answers whole
 * (holds, audit) are sorted, filtered and paged here. `businessToday` is the audit's default day.
 */
export function makeDataProvider(client: ApiClient, businessToday: () => string): ConsoleDataProvider {
  let currency: Currency | undefined;
  const cursors = new Map<string, (string | null)[]>();

  async function call<T>(request: Promise<Answer<T>>): Promise<T> {
    const { data, error, response } = await request;
    if (!response.ok || data === undefined) throw toHttpError(response.status, error, i18nProvider.translate);
    const answered = (data as { currency?: Currency }).currency;
    if (answered) currency = answered;
    return data;
  }

  async function cursorPage<T>(
    key: string,
    params: { pagination?: { page: number; perPage: number } },
    fetchPage: (cursor: string | undefined, limit: number) => Promise<Page<T>>,
    toRecord: (item: T, page: Page<T>) => RaRecord,
  ): Promise<GetListResult> {
    const { page: asked = 1, perPage = 20 } = params.pagination ?? {};
    const limit = Math.min(Math.max(perPage, 1), 100);
    const slot = `${key}|${limit}`;
    // known[i]: the cursor of page i + 1 (null: the first page, which needs none)
    const known = asked === 1 ? [null] : (cursors.get(slot) ?? [null]);
    let page = asked;
    let answer: Page<T> | undefined;
    while (known.length < page) {
      const walked = await fetchPage(known[known.length - 1] ?? undefined, limit);
      if (!walked.next_cursor) {
        page = known.length; // fewer pages than asked: this is the last
        answer = walked;
        break;
      }
      known.push(walked.next_cursor);
    }
    answer ??= await fetchPage(known[page - 1] ?? undefined, limit);
    known.length = page;
    if (answer.next_cursor) known.push(answer.next_cursor);
    cursors.set(slot, known);
    const current = answer;
    const data = current.items.map((item) => toRecord(item, current));
    const pageInfo = { hasNextPage: Boolean(current.next_cursor), hasPreviousPage: page > 1 };
    // The last page tells the total; before it, only that there is more.
    return current.next_cursor ? { data, pageInfo } : { data, pageInfo, total: (page - 1) * limit + data.length };
  }

  function localPage(records: RaRecord[], params: GetListParams, serverFilters: string[] = []): GetListResult {
    let rows = records;
    for (const [field, value] of Object.entries(params.filter ?? {})) {
      if (serverFilters.includes(field) || value === undefined || value === null || value === '') continue;
      if (field === 'q') {
        const needle = String(value).toLowerCase();
        rows = rows.filter((row) => JSON.stringify(row).toLowerCase().includes(needle));
      } else {
        rows = rows.filter((row) =>
          Array.isArray(row[field]) ? row[field].includes(value) : String(row[field]) === String(value),
        );
      }
    }
    const { field, order } = params.sort ?? { field: 'id', order: 'ASC' };
    if (field) {
      const direction = order === 'DESC' ? -1 : 1;
      rows = [...rows].sort((a, b) => {
        const [x, y] = [a[field] ?? '', b[field] ?? ''];
        return (x < y ? -1 : x > y ? 1 : 0) * direction;
      });
    }
    const { page = 1, perPage = 25 } = params.pagination ?? {};
    return { data: rows.slice((page - 1) * perPage, page * perPage), total: rows.length };
  }

  const user = (value: Identifier) => ({ path: { user: String(value) } });

  /** A paged list of the server's: its cursor slot, one page of it, and its records. */
  type Pager<T> = {
    key: string;
    fetchPage: (cursor: string | undefined, limit: number) => Promise<Page<T>>;
    toRecord: (item: T, page: Page<T>) => RaRecord;
  };

  function flagsPager(filter: Record<string, unknown> | undefined): Pager<Schemas['Flag']> {
    const status = (filter?.status || undefined) as Schemas['Flag']['status'] | undefined;
    return {
      key: `flags|${status ?? ''}`,
      fetchPage: (cursor, limit) =>
        call(client.GET('/ops/v1/flags', { params: { query: { status, limit, cursor } } })),
      toRecord: (flag, page) => ({ ...flag, id: flag.flag_id, currency: page.currency }),
    };
  }

  const adjustmentsPager: Pager<Schemas['Adjustment']> = {
    key: 'adjustments|pending',
    fetchPage: (cursor, limit) =>
      call(client.GET('/ops/v1/adjustments/pending', { params: { query: { limit, cursor } } })),
    toRecord: (adjustment, page) => ({ ...adjustment, id: adjustment.reference, currency: page.currency }),
  };

  function withdrawalsPager(filter: Record<string, unknown> | undefined): Pager<Schemas['PendingWithdrawal']> {
    const overdue = filter?.overdue === true || filter?.overdue === 'true' ? true : undefined;
    const from = filter?.from ? String(filter.from) : undefined;
    const to = filter?.to ? String(filter.to) : undefined;
    return {
      key: `withdrawals|${overdue ? 'overdue' : 'all'}|${from ?? ''}|${to ?? ''}`,
      fetchPage: (cursor, limit) =>
        call(client.GET('/ops/v1/withdrawals/pending', { params: { query: { overdue, from, to, limit, cursor } } })),
      toRecord: (withdrawal, page) => ({ ...withdrawal, id: withdrawal.withdrawal_id, currency: page.currency }),
    };
  }

  /** A page of a cursor-paged list; with `meta.everyPage` (an export), every page up to `perPage` records. */
  const paged = async <T,>(pager: Pager<T>, params: GetListParams): Promise<GetListResult> => {
    if (!params.meta?.everyPage) return cursorPage(pager.key, params, pager.fetchPage, pager.toRecord);
    const walked = await walk(pager, Math.ceil((params.pagination?.perPage ?? 100) / 100));
    return { data: walked.records, total: walked.records.length };
  };

  async function walk<T>(pager: Pager<T>, maxPages: number): Promise<Walked> {
    const records: RaRecord[] = [];
    let cursor: string | undefined;
    let answered: Currency | undefined;
    for (let page = 0; page < maxPages; page++) {
      const answer = await pager.fetchPage(cursor, 100);
      answered = answer.currency;
      records.push(...answer.items.map((item) => pager.toRecord(item, answer)));
      if (!answer.next_cursor) return { records, complete: true, currency: answered };
      cursor = answer.next_cursor;
    }
    return { records, complete: false, currency: answered };
  }

  /** A report's JSON answer (the route also answers CSV, asked for by `format=csv` only). */
  function json<T extends object>(answer: T | string): T {
    if (typeof answer === 'string') throw new Error('the report answered text, not JSON');
    return answer;
  }

  const reference = (value: string) => ({ path: { reference: value } });
  const flag = (value: string) => ({ path: { flag_id: value } });
  const packet = (value: string) => ({ path: { packet_id: value } });

  async function manyReference(resource: string, params: GetManyReferenceParams): Promise<GetListResult> {
    const owner = String(params.id);
    switch (resource) {
      case 'movements':
        return cursorPage(
          `movements|${owner}`,
          params,
          (cursor, limit) =>
            call(client.GET('/ops/v1/users/{user}/movements', { params: { ...user(owner), query: { limit, cursor } } })),
          (item, page) => ({
            ...item,
            id: `${item.at}#${item.kind}#${item.reference ?? item.packet_id ?? ''}`,
            currency: page.currency,
          }),
        );
      case 'user_packets': {
        const role = params.filter?.role === 'received' ? 'received' : 'sent';
        return cursorPage(
          `packets|${role}|${owner}`,
          params,
          (cursor, limit) =>
            call(
              client.GET('/ops/v1/users/{user}/packets', {
                params: { ...user(owner), query: { role, limit, cursor } },
              }),
            ),
          (item, page) => ({ ...item, id: item.packet_id, role, currency: page.currency }),
        );
      }
      case 'user_flags':
        // `others`: the users the flag names beside this one
        return cursorPage(
          `user_flags|${owner}`,
          params,
          (cursor, limit) =>
            call(client.GET('/ops/v1/users/{user}/flags', { params: { ...user(owner), query: { limit, cursor } } })),
          (item, page) => ({
            ...item,
            id: item.flag_id,
            others: item.users.filter((named) => named !== owner),
            currency: page.currency,
          }),
        );
      case 'user_audit':
        // an entry has no id of its own: its instant, action and subject, and its place in the page
        return cursorPage(
          `user_audit|${owner}`,
          params,
          (cursor, limit) =>
            call(client.GET('/ops/v1/users/{user}/audit', { params: { ...user(owner), query: { limit, cursor } } })),
          (item, page) => ({
            ...item,
            id: `${item.at}#${item.action}#${item.subject}#${page.items.indexOf(item)}`,
            currency: page.currency,
          }),
        );
      default:
        throw new Error(`${resource}: no such list of a user`);
    }
  }

  const unsupported = (what: string) => () => Promise.reject(new Error(`${what} is not an operation of the operators' API`));

  const provider: ConsoleDataProvider = {
    async getList(resource, params) {
      switch (resource) {
        case 'holds': {
          const answer = await call(client.GET('/ops/v1/holds'));
          const records = answer.items.map((hold) => ({ ...hold, id: hold.user, currency: answer.currency }));
          return localPage(records, params);
        }
        case 'flags':
          return paged(flagsPager(params.filter), params);
        case 'adjustments':
          return paged(adjustmentsPager, params);
        case 'withdrawals':
          return paged(withdrawalsPager(params.filter), params);
        case 'audit': {
          const day = String(params.filter?.day || businessToday());
          const to = params.filter?.to ? String(params.filter.to) : undefined;
          const answer = await call(client.GET('/ops/v1/audit/{day}', { params: { path: { day }, query: { to } } }));
          const records = answer.entries.map((entry, index) => ({
            ...entry,
            id: `${answer.day}#${index}`,
            currency: answer.currency,
          }));
          return localPage(records, params, ['day', 'to']);
        }
        case 'movements':
        case 'user_packets':
        case 'user_flags':
        case 'user_audit':
          if (!params.filter?.user) return { data: [], total: 0 };
          return manyReference(resource, { ...params, target: 'user', id: params.filter.user } as GetManyReferenceParams);
        default:
          throw new Error(`${resource}: no list in the operators' API`);
      }
    },

    async getOne(resource, params) {
      switch (resource) {
        case 'users': {
          const answer = await call(client.GET('/ops/v1/users/{user}', { params: user(params.id) }));
          return { data: { ...answer, id: answer.user } as never };
        }
        case 'packets': {
          const answer = await call(
            client.GET('/ops/v1/packets/{packet_id}', { params: { path: { packet_id: String(params.id) } } }),
          );
          return { data: { ...answer, id: answer.packet_id } as never };
        }
        case 'withdrawals': {
          const answer = await call(
            client.GET('/ops/v1/withdrawals/{withdrawal_id}', { params: { path: { withdrawal_id: String(params.id) } } }),
          );
          return { data: { ...answer, id: answer.withdrawal_id } as never };
        }
        case 'adjustments': {
          const answer = await call(client.GET('/ops/v1/adjustments/{reference}', { params: reference(String(params.id)) }));
          return { data: { ...answer, id: answer.reference } as never };
        }
        default:
          throw new Error(`${resource}: no record of its own in the operators' API`);
      }
    },

    async getMany(resource, params) {
      const records = await Promise.all(params.ids.map((id) => provider.getOne(resource, { id })));
      return { data: records.map((record) => record.data) };
    },

    getManyReference: ((resource: string, params: GetManyReferenceParams) =>
      manyReference(resource, params)) as DataProvider['getManyReference'],

    async create(resource, params) {
      if (resource !== 'adjustments') throw new Error(`${resource}: nothing to create`);
      const body = params.data as AdjustmentProposal;
      const answer = await call(client.POST('/ops/v1/adjustments', { body }));
      return {
        data: {
          ...answer.adjustment,
          id: answer.adjustment.reference,
          applied: answer.applied,
          balance_cents: answer.balance_cents,
          currency: answer.currency,
        } as never,
      };
    },

    update: unsupported('update'),
    updateMany: unsupported('updateMany'),
    delete: unsupported('delete'),
    deleteMany: unsupported('deleteMany'),

    placeHold: (target, body) =>
      call(client.POST('/ops/v1/users/{user}/hold', { params: user(target), body })),
    liftHold: (target, reason) =>
      call(client.POST('/ops/v1/users/{user}/hold/lift', { params: user(target), body: { reason } })),
    approveAdjustment: (ref) =>
      call(client.POST('/ops/v1/adjustments/{reference}/approve', { params: reference(ref) })),
    rejectAdjustment: (ref, reason) =>
      call(client.POST('/ops/v1/adjustments/{reference}/reject', { params: reference(ref), body: { reason } })),
    withdrawAdjustment: (ref, reason) =>
      call(client.POST('/ops/v1/adjustments/{reference}/withdraw', { params: reference(ref), body: { reason } })),
    resolveFlag: (flagId, body) => call(client.POST('/ops/v1/flags/{flag_id}/resolve', { params: flag(flagId), body })),
    assignFlag: (flagId, assignee) =>
      call(client.POST('/ops/v1/flags/{flag_id}/assign', { params: flag(flagId), body: assignee ? { assignee } : {} })),
    businessHours: async (day) =>
      json(await call(client.GET('/ops/v1/reports/hours/{day}', { params: { path: { day } } }))),
    trialBalance: async (day) =>
      json(await call(client.GET('/ops/v1/reports/trial-balance/{day}', { params: { path: { day } } }))),
    trialBalanceCsv: (day) =>
      call(
        client.GET('/ops/v1/reports/trial-balance/{day}', {
          params: { path: { day }, query: { format: 'csv' } },
          parseAs: 'text',
        }),
      ),
    statement: async (target, day, to) =>
      json(
        await call(
          client.GET('/ops/v1/users/{user}/statements/{day}', {
            params: { path: { user: target, day }, query: { to: to || undefined } },
          }),
        ),
      ),
    statementCsv: (target, day, to) =>
      call(
        client.GET('/ops/v1/users/{user}/statements/{day}', {
          params: { path: { user: target, day }, query: { to: to || undefined, format: 'csv' } },
          parseAs: 'text',
        }),
      ),
    packetSides: (packetId) => call(client.GET('/ops/v1/packets/{packet_id}/sides', { params: packet(packetId) })),
    resendWithdrawal: (withdrawalId, reason) =>
      call(
        client.POST('/ops/v1/withdrawals/{withdrawal_id}/resend', {
          params: { path: { withdrawal_id: withdrawalId } },
          body: { reason },
        }),
      ),
    releasePacket: (packetId, reason) =>
      call(client.POST('/ops/v1/packets/{packet_id}/release', { params: packet(packetId), body: { reason } })),
    reconcile: (asOf) => call(client.POST('/ops/v1/reconciliations', { body: asOf ? { as_of: asOf } : {} })),
    everyPage(resource, filter, maxPages = 20) {
      switch (resource) {
        case 'flags':
          return walk(flagsPager(filter), maxPages);
        case 'adjustments':
          return walk(adjustmentsPager, maxPages);
        case 'withdrawals':
          return walk(withdrawalsPager(filter), maxPages);
      }
    },
    async currency() {
      if (currency) return currency;
      return (await call(client.GET('/ops/v1/holds'))).currency;
    },
  };
  return provider;
}
