/** A PostgreSQL unique-constraint violation (SQLSTATE 23505): a concurrent or repeated insert lost. */
export const isUniqueViolation = (error: unknown): boolean => (error as { code?: unknown } | null)?.code === '23505';
