# syntax=docker/dockerfile:1
# Build with the policy signing key as a BuildKit secret (docker-compose.yml does; by hand:
#   docker build --secret id=policy_signing_key,src=policy-keys/signing-key.pem .).
# Stage 1: the pinned opa, built from the Go module proxy (tools/opa/go.mod), never a release binary.
FROM golang:1.26-bookworm AS tools
WORKDIR /src/tools/opa
COPY tools/opa/go.mod tools/opa/go.sum ./
RUN GOBIN=/out go install tool

# Stage 2: TypeScript and the signed policy bundle.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# npm workspaces (the SDK, grantctl, the MCP broker example, the MCP gateway): npm ci needs each one's package.json.
COPY clients/typescript/package.json clients/typescript/package.json
COPY clients/grantctl/package.json clients/grantctl/package.json
COPY examples/mcp-broker/package.json examples/mcp-broker/package.json
COPY gateway/package.json gateway/package.json
RUN npm ci --no-audit --no-fund
COPY --from=tools /out/opa .tools/bin/opa
COPY tsconfig.json tsconfig.build.json ./
COPY src src
COPY migrations migrations
COPY examples examples
COPY gateway gateway
COPY clients clients
COPY policies policies
COPY scripts scripts
COPY tools/opa/capabilities.json tools/opa/capabilities.json
RUN npm run build:clients && npm run build:ts
# The API reference (/api/docs), rendered from the OpenAPI document with its script inlined.
RUN npm run build:docs
# The web console the service serves at /console/ (Vite: static files under build/console).
COPY console console
RUN npm run build:console
# Production loads only a signed bundle (src/config.ts). The private key is mounted for this one
# command and is in no layer; the public key is copied first so that a new key pair rebuilds the
# bundle instead of reusing a cached one signed by the old key, and the build verifies the bundle
# with it (a mismatched pair fails here, not when the service starts).
COPY policy-keys/signing-key.pub.pem policy-keys/signing-key.pub.pem
RUN --mount=type=secret,id=policy_signing_key,required=true \
    TOOLS_PREINSTALLED=1 \
    POLICY_SIGNING_KEY=/run/secrets/policy_signing_key \
    POLICY_VERIFY_KEY=policy-keys/signing-key.pub.pem \
    npm run build:policy

# Stage 3: what runs. The verification key is not in the image: it is the deployment's to give
# (POLICY_BUNDLE_PUBLIC_KEY, mounted by docker-compose.yml), so an image cannot vouch for itself.
FROM node:24-bookworm-slim
# The service listens on loopback unless told otherwise; in a container it must answer on the
# container's own interface for the published port to reach it.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    POLICY_BUNDLE_PATH=build/policy/bundle.tar.gz
WORKDIR /app
COPY package.json package-lock.json ./
# npm workspaces (the SDK, grantctl, the MCP broker example, the MCP gateway): npm ci needs each one's package.json.
COPY clients/typescript/package.json clients/typescript/package.json
COPY clients/grantctl/package.json clients/grantctl/package.json
COPY examples/mcp-broker/package.json examples/mcp-broker/package.json
COPY gateway/package.json gateway/package.json
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist dist
# Envoy's .proto files, read at start by the ext_authz gRPC service.
COPY proto proto
COPY --from=build /app/build/policy build/policy
COPY --from=build /app/build/api-docs.html build/api-docs.html
COPY --from=build /app/build/console build/console
# The OpenAPI document's introduction (GET /api/openapi.json), read at start.
COPY docs/api-decisions.md docs/api-decisions.md
# The SDK and grantctl, each built to its own dist: the MCP broker requires the SDK by its package
# name, and `node clients/grantctl/bin/grantctl.js …` runs grantctl in the container.
COPY --from=build /app/clients/typescript/dist clients/typescript/dist
COPY --from=build /app/clients/grantctl/dist clients/grantctl/dist
COPY clients/grantctl/bin clients/grantctl/bin
USER node
EXPOSE 8080
# A larger young generation (V8's semi-space, 32 MB): a check's short-lived objects die there
# instead of being promoted, so the old generation's long pauses, which set the check's p99, are rarer
# (docs/broker-check.md). The price is a young generation that may grow to a few times that.
CMD ["node", "--max-semi-space-size=32", "dist/src/main.js"]
