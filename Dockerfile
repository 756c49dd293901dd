# One image for the API, the worker and the migration job (the command picks the role).
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# patches/ is applied by `postinstall` (patch-package): docs/decisions.md "The workflow sandbox, patched"
COPY patches ./patches
RUN npm ci
COPY . .
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production \
    WORKFLOW_BUNDLE_PATH=/app/dist/workflow-bundle.js \
    DATA_DIR=/app/data
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
RUN mkdir -p /app/data && chown node:node /app/data
USER node
EXPOSE 3000
CMD ["node", "dist/api/main.js"]
