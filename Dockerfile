# The worker image: the compiled lib/ (run `npm run build` first) with production dependencies only,
# running as the unprivileged `node` user. ECS sends SIGTERM on stop; `starry worker` then lets
# activities in flight finish for up to 45 s before they are retried elsewhere.
FROM node:22-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
COPY lib ./lib
USER node
CMD ["node", "bin/starry.js", "worker"]
