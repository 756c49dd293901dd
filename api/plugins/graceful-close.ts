import fp from 'fastify-plugin';

/**
 * Graceful shutdown: `app.close()` stops listening and waits for requests in flight. A response
 * finished during that wait carries `Connection: close`, so its keep-alive socket ends with it
 * instead of holding the close open for Fastify's 72-second keep-alive timeout.
 */
export const gracefulClosePlugin = fp(async (app) => {
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('connection', 'close');
  });
}, { name: 'graceful-close' });
