// chan_a's open platform (official-account OAuth, the JS-SDK ticket API): answers shared by its calls.

/**
 * errcodes that blame our official account (AppID, AppSecret, the server IP whitelist), not the
 * caller: configuration for an operator to fix, so 503 `NOT_CONFIGURED` rather than the caller's error.
 */
export const ACCOUNT_CREDENTIAL_ERRCODES: ReadonlySet<number> = new Set([40001, 40013, 40125, 40164, 41002, 41004]);
