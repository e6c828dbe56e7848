# The server as a container: Node 24 runs the TypeScript sources directly (type stripping), so the image
# is the production dependencies plus the sources, run as the unprivileged `node` user.
# Build: docker build -t open-agent-api .   Run: docker run -p 3000:3000 open-agent-api
FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# Production dependencies only: no test tools, no pinned Node binary (the image has its own Node).
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production \
    PORT=3000 \
    DATA_DIR=/data
# jemalloc, which scripts/serve.sh preloads: it gives the memory a busy spell frees back to the system.
RUN apt-get update && apt-get install -y --no-install-recommends libjemalloc2 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json open-agent-api.yaml ./
COPY generated ./generated
COPY server ./server
COPY scripts/serve.sh ./scripts/serve.sh
COPY client ./client
COPY playground/dist ./playground/dist
# PGlite's data directory when DATABASE_URL is not set; owned by the user the server runs as.
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 3000
VOLUME ["/data"]
# Liveness: the process answers. Readiness (/ready, the database) is the orchestrator's to ask.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# As npm start: sh execs node, which runs as PID 1 and gets the stop signal.
CMD ["sh", "scripts/serve.sh"]
