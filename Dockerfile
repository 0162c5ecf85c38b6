# The worker image: the compiled lib/ (run `npm run build` first) with production dependencies only,
# running as the unprivileged `node` user. ECS sends SIGTERM on stop; `starry worker` then lets
# activities in flight finish for up to 45 s before they are retried elsewhere.
FROM node:22-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
# bubblewrap confines what shell.run and MCP servers start (activities/tools/confine.ts; prlimit and setpriv
# come with util-linux). No set-uid program stays: a tool worker on EC2 runs in a privileged container
# (docs/DEPLOY.md#shellrun-on-ec2), where one would hand its user every capability.
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap \
  && rm -rf /var/lib/apt/lists/* \
  && find / -xdev -perm /6000 -type f -exec chmod a-s {} +
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
COPY lib ./lib
USER node
CMD ["node", "bin/starry.js", "worker"]
