// nginx in front of the API processes: one definition of the proxy, rendered for `npm run topology`
// (127.0.0.1 upstreams) and for docker-compose.yml (scripts/topology/nginx-compose.conf, kept equal
// to what this renders by test/platform/topology-compose.test.ts).

export interface ProxyOptions {
  /** `127.0.0.1:8080` for the topology, `8080` in a container. */
  listen: string;
  /** `host:port` of each API process. */
  upstreams: string[];
}

/**
 * docker-compose.yml's proxy: nginx on the compose network, in front of the `api` service (Docker's
 * DNS answers every replica's address, and nginx balances over them). The committed file
 * scripts/topology/nginx-compose.conf is `renderProxyConfig(composeProxy)`.
 */
export const composeProxy: ProxyOptions = { listen: '8080', upstreams: ['api:3000'] };

/**
 * The `http { … }` content: an upstream of every API and a server passing everything to it.
 * - Streams (run NDJSON and SSE, the data API's realtime websocket): no buffering either way, HTTP/1.1
 *   with the upgrade headers, and an hour before an idle upstream read times out (a waiting run's
 *   stream may be quiet between keep-alives).
 * - The API trusts X-Forwarded-For/-Proto/-Host from its proxy (TRUST_PROXY), so rate limits and
 *   audit lines see the caller's address, not nginx's.
 * - A request that could not reach one API (refused connection: it was killed) goes to the other;
 *   a request an API already received is never sent twice (nginx's default for POST). When the API
 *   holding a request dies, the caller gets what the API itself answers during an outage: 503 with
 *   Retry-After, naming the retry that is safe (the same Idempotency-Key returns the same run).
 * - Bodies up to the largest upload the API accepts (STORAGE_MAX_UPLOAD_BYTES, 50 MiB) plus form overhead.
 */
export function renderProxyConfig(options: ProxyOptions): string {
  return `map $http_upgrade $connection_upgrade {
  default upgrade;
  '' '';
}

upstream wfapp_api {
${options.upstreams.map((address) => `  server ${address} max_fails=1 fail_timeout=2s;`).join('\n')}
  keepalive 64;
}

server {
  listen ${options.listen};
  client_max_body_size 64m;

  location / {
    proxy_pass http://wfapp_api;
    proxy_http_version 1.1;
    proxy_set_header Upgrade $http_upgrade;
    proxy_set_header Connection $connection_upgrade;
    proxy_set_header Host $http_host;
    proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
    proxy_set_header X-Forwarded-Proto $scheme;
    proxy_set_header X-Forwarded-Host $http_host;
    proxy_buffering off;
    proxy_request_buffering off;
    proxy_cache off;
    proxy_read_timeout 3600s;
    proxy_send_timeout 3600s;
    proxy_next_upstream error timeout;
    proxy_next_upstream_tries 2;
    error_page 502 504 = @api_unavailable;
  }

  location @api_unavailable {
    default_type application/json;
    add_header Retry-After 1 always;
    return 503 '{"error":"dependency_unavailable","message":"The API process serving this request went away; retry it (with the same Idempotency-Key, it starts no second run)"}';
  }
}
`;
}

/** A whole nginx.conf for a foreground nginx whose files all live under `prefix`. */
export function renderStandaloneConfig(options: ProxyOptions & { prefix: string; workers: number | 'auto'; runAsRoot: boolean }): string {
  const temp = (name: string) => `  ${name}_temp_path ${options.prefix}/${name}_temp;`;
  return [
    options.runAsRoot ? 'user root;' : '',
    `worker_processes ${options.workers};`,
    `pid ${options.prefix}/nginx.pid;`,
    `error_log ${options.prefix}/logs/error.log warn;`,
    'events { worker_connections 4096; }',
    'http {',
    '  access_log off;',
    ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(temp),
    ...renderProxyConfig(options).trimEnd().split('\n').map((line) => (line ? `  ${line}` : line)),
    '}',
    '',
  ].join('\n');
}
