// The sentence an operator reads for each answer of the API (no imports: node's test runner
// transpiles and loads it as it is, console/test/errors.test.mjs).

/** The app's error shape: `{"error": {"code", "message", "field"?, "roles"?}}`. */
type AppError = { error: { code: string; message: string; field?: string; roles?: string[] } };

/** Translates a key with its arguments (react-admin's i18nProvider.translate). */
export type Translate = (key: string, args?: Record<string, unknown>) => string;

function isAppError(body: unknown): body is AppError {
  const error = (body as AppError | null)?.error;
  return typeof error === 'object' && error !== null && typeof error.code === 'string';
}

/**
 * The sentence an operator reads for an answer of the API, in the console's language: one per
 * `code` (`console.errors.<code>`), naming the field (`console.error_fields.<field>`) or the
 * roles (`console.roles.<role>`) it concerns. Never the server's own message, which is English
 * for engineers: a code the console has no sentence for reads as the generic failure.
 */
export function sentence(status: number, body: unknown, translate: Translate): string {
  const fallback = translate('console.errors.http', { status });
  if (isAppError(body)) {
    const { code, field, roles } = body.error;
    const known = (key: string, args?: Record<string, unknown>) => {
      const text = translate(key, { _: '', ...args });
      return text === '' || text === key ? fallback : text;
    };
    if (roles?.length) {
      const named = roles.map((role) => translate(`console.roles.${role}`, { _: role })).join(translate('console.errors.roles_separator', { _: ', ' }));
      return known('console.errors.forbidden_roles', { roles: named });
    }
    if (field && (code === 'invalid_request' || code === 'limit_exceeded')) {
      const key = code === 'invalid_request' ? 'console.errors.invalid_request_field' : 'console.errors.limit_exceeded';
      return known(key, { field: translate(`console.error_fields.${field}`, { _: field }) });
    }
    return known(`console.errors.${code}`);
  }
  // API Gateway's own answers (`{"message": …}`: 401, 403, 404, 429, 5xx) and anything else.
  return fallback;
}
