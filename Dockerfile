# syntax=docker/dockerfile:1
# Stage 1: the pinned opa, built from the Go module proxy (tools/opa/go.mod), never a release binary.
FROM golang:1.26-bookworm AS tools
WORKDIR /src/tools/opa
COPY tools/opa/go.mod tools/opa/go.sum ./
RUN GOBIN=/out go install tool

# Stage 2: TypeScript and the policy module.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY --from=tools /out/opa .tools/bin/opa
COPY tsconfig.json tsconfig.build.json ./
COPY src src
COPY migrations migrations
COPY examples examples
COPY policies policies
COPY scripts scripts
COPY tools/opa/capabilities.json tools/opa/capabilities.json
RUN TOOLS_PREINSTALLED=1 npm run build

# Stage 3: what runs.
FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist dist
COPY --from=build /app/build/policy build/policy
USER node
EXPOSE 8080
CMD ["node", "dist/src/main.js"]
